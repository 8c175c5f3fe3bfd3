#include "engines/cuda/common/epilogue_layout.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "core/dtype.hpp"
#include "engines/cuda/codegen/emitter.hpp"
#include "engines/cuda/codegen/pointwise_ops.hpp"

namespace dnngraph::cuda {
namespace {

using codegen::Access;
using codegen::identity_bits;
using codegen::is_dense;
using codegen::supported_type;
using codegen::Layout;
using codegen::Operand;
using codegen::Role;

// The one stride that walks `axes` (outermost first) as a single index, or false when the tensor's
// strides do not nest that way.
bool collapse(const std::vector<int>& axes, const std::vector<int64_t>& dom, const std::vector<int64_t>& s,
              int64_t& out) {
  int64_t unit = -1, span = 1;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const size_t a = static_cast<size_t>(*it);
    if (dom[a] == 1) continue;
    if (unit < 0) {
      unit = s[a];
      span = dom[a];
      continue;
    }
    if (s[a] != unit * span) return false;
    span *= dom[a];
  }
  out = unit < 0 ? 0 : unit;
  return true;
}

int64_t group_size(const std::vector<int>& axes, const std::vector<int64_t>& dom) {
  int64_t v = 1;
  for (int a : axes) v *= dom[static_cast<size_t>(a)];
  return v;
}

struct Builder {
  const Partition& p;
  const EpilogueAxes& ax;
  const expr::Program& prog;
  Layout& L;
  std::string& why;

  const ir::Graph& g() const { return *p.graph; }
  std::string tname(int id) const { return "tensor '" + g().tensor(id).name + "'"; }

  bool fail(std::string msg) {
    why = std::move(msg);
    return false;
  }

  bool add_operand(int tensor, Role role, int reduction) {
    const ir::Tensor& t = g().tensor(tensor);
    if (role != Role::ACC && !supported_type(t.dtype))
      return fail(tname(tensor) + ": data type " + std::string(to_string(t.dtype)) + " is not supported in a GPU epilogue");
    std::vector<int64_t> s(prog.domain.size(), 0);
    for (size_t a = 0; a < s.size(); ++a) {
      s[a] = t.dims[a] == 1 ? 0 : t.strides[a];
      if (s[a] < 0) return fail(tname(tensor) + ": negative strides are not supported");
      if (role == Role::STORE && s[a] == 0 && prog.domain[a] > 1)
        return fail(tname(tensor) + ": an output with stride 0 on dim " + std::to_string(a) + " would be written twice");
    }
    Operand op;
    op.tensor = tensor;
    op.role = role;
    op.dtype = role == Role::ACC ? DataType::FLOAT : t.dtype;
    op.reduction = reduction;
    for (int a : ax.batch) op.strides.push_back(s[static_cast<size_t>(a)]);
    int64_t sm = 0, sn = 0;
    if (!collapse(ax.m, prog.domain, s, sm) || !collapse(ax.n, prog.domain, s, sn))
      return fail(tname(tensor) + ": its strides " + dims_string(t.strides) +
                  " do not walk the GEMM rows and columns as single indices (use a packed or broadcast layout)");
    op.strides.push_back(sm);
    op.strides.push_back(sn);
    L.operands.push_back(std::move(op));
    return true;
  }

  static std::string dims_string(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  }

  bool add_reduction(int tensor) {
    codegen::Reduction r;
    if (!codegen::describe_reduction(prog, g(), tensor, L.volume, r, why)) return false;
    r.in_output = r.dtype == DataType::FLOAT && !expr::reduction_needs_finalize(r.mode);
    L.reductions.push_back(r);
    if (r.full) return true;
    L.reductions.back().operand = static_cast<int>(L.operands.size());
    return add_operand(tensor, Role::ACC, static_cast<int>(L.reductions.size()) - 1);
  }

  // GEN_INDEX needs the element's index along one domain axis: batch axes and single-axis groups have it.
  bool map_axes() {
    const size_t n = prog.domain.size();
    L.dim_of_axis.assign(n, -1);
    const int nb = static_cast<int>(ax.batch.size());
    for (int i = 0; i < nb; ++i) L.dim_of_axis[static_cast<size_t>(ax.batch[static_cast<size_t>(i)])] = i;
    auto single = [&](const std::vector<int>& axes, int dim) {
      int real = -1, count = 0;
      for (int a : axes)
        if (prog.domain[static_cast<size_t>(a)] > 1) real = a, ++count;
      if (count == 1) L.dim_of_axis[static_cast<size_t>(real)] = dim;
    };
    single(ax.m, nb);
    single(ax.n, nb + 1);
    for (const auto& in : prog.code) {
      if (in.kind != expr::InstrKind::INDEX) continue;
      if (in.axis < 0 || static_cast<size_t>(in.axis) >= n) return fail("GEN_INDEX axis " + std::to_string(in.axis) + " is outside the domain");
      if (prog.domain[static_cast<size_t>(in.axis)] > 1 && L.dim_of_axis[static_cast<size_t>(in.axis)] < 0)
        return fail("GEN_INDEX along axis " + std::to_string(in.axis) +
                    " is not supported here (the axis is folded into the GEMM rows or columns)");
    }
    return true;
  }

  bool run() {
    for (int a : ax.batch) L.dims.push_back(prog.domain[static_cast<size_t>(a)]);
    L.dims.push_back(group_size(ax.m, prog.domain));
    L.dims.push_back(group_size(ax.n, prog.domain));
    L.volume = 1;
    for (int64_t d : L.dims) L.volume *= d;
    if (L.rank() > codegen::kMaxRank)
      return fail("the output has " + std::to_string(ax.batch.size()) + " batch dims; the epilogue takes at most " +
                  std::to_string(codegen::kMaxRank - 2));
    if (!map_axes()) return false;
    if (!codegen::collect_operands(prog, true, L, *this) || !codegen::check_counts(L, "epilogue tensors", why))
      return false;
    choose_access();
    place_workspace();
    return true;
  }

  // The kernels read staged accumulators 4 columns at a time: a vector where the operand is
  // contiguous along n and every other stride keeps groups of 4 aligned.
  void choose_access() {
    L.vec = 4;
    const int r = L.rank();
    int64_t max_offset = L.volume;
    for (auto& op : L.operands) {
      const int64_t sn = op.strides[static_cast<size_t>(r - 1)];
      bool even = true;
      for (int d = 0; d + 1 < r; ++d) even = even && op.strides[static_cast<size_t>(d)] % L.vec == 0;
      op.inner = sn == 0 ? Access::BCAST : (sn == 1 && even && op.role != Role::ACC) ? Access::VEC : Access::STRIDED;
      int64_t m = 0;
      for (int d = 0; d < r; ++d) m += (L.dims[static_cast<size_t>(d)] - 1) * op.strides[static_cast<size_t>(d)];
      max_offset = std::max(max_offset, m + 1);
    }
    L.wide_index = max_offset >= (int64_t{1} << 31);
  }

  void place_workspace() {
    int64_t off = 0;
    for (auto& r : L.reductions) {
      if (r.in_output) continue;
      r.acc_offset = off;
      off = (off + r.volume * 4 + 255) / 256 * 256;
    }
    L.workspace_bytes = off;
  }
};

}  // namespace

int anchor_node(const Partition& p) {
  if (p.anchor >= 0) return p.anchor;
  if (p.nodes.size() != 1) return -1;
  const ir::Node& n = p.node(0);
  const bool gemm_like = ir::is<MatmulAttr>(n) || ir::is<ConvFpropAttr>(n) || ir::is<ConvDgradAttr>(n) || ir::is<ConvWgradAttr>(n);
  return gemm_like ? p.nodes[0] : -1;
}

bool plan_epilogue(const Partition& p, const EpilogueAxes& axes, bool dynamic, EpiloguePlan& out, std::string& why) {
  out = EpiloguePlan{};
  if (!codegen::checked_on_gpu(p, why)) return false;
  if (!expr::lower(p, anchor_node(p), out.prog, why)) return false;
  if (!codegen::has_expressions(out.prog, why)) return false;
  out.L.dynamic = dynamic;
  Builder b{p, axes, out.prog, out.L, why};
  return b.run();
}

std::string epilogue_source(const EpiloguePlan& e, const ir::Graph& g, bool register_store) {
  return "namespace dg_gen {\n" + codegen::emit_epilogue(e.prog, g, e.L, register_store) + "}  // namespace dg_gen\n";
}

std::string finalize_source(const codegen::Layout& L) {
  if (!L.needs_finalize()) return "";
  std::ostringstream os;
  os << "extern \"C\" __global__ void __launch_bounds__(256) " << kEpilogueFinalizeKernel
     << "(const dg::PointwiseParams p) {\n  __shared__ float scratch[32];\n  (void)scratch;\n"
     << codegen::emit_finalize_calls(L, "1", false) << "}\n";
  return os.str();
}

Status epilogue_params(const Partition& p, const codegen::Layout& L, const ExecArgs& args,
                       codegen::PointwiseParams& params, int& vec) {
  std::vector<float> scalars;
  for (int id : L.scalars) {
    const void* ptr = args.ptrs[static_cast<size_t>(id)];
    if (!ptr) return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + p.tensor(id).name + "': the scalar's pointer is null"};
    scalars.push_back(static_cast<float>(dtype::load(ptr, p.tensor(id).dtype, 0)));
  }
  for (const auto& op : L.operands)
    if (op.role != Role::ACC && !args.ptrs[static_cast<size_t>(op.tensor)])
      return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + p.tensor(op.tensor).name + "': the pointer is null"};
  if (L.workspace_bytes > 0 && !args.workspace)
    return {ErrorCode::WORKSPACE_TOO_SMALL, "the fused epilogue needs " + std::to_string(L.workspace_bytes) +
                                               " bytes of workspace but it is null"};
  vec = L.vec;
  for (const auto& op : L.operands) {
    if (op.inner != Access::VEC) continue;
    const auto addr = reinterpret_cast<uintptr_t>(args.ptrs[static_cast<size_t>(op.tensor)]);
    if (addr % static_cast<uintptr_t>(L.vec * size_of(op.dtype)) != 0) vec = 1;
  }
  codegen::fill_params(L, 1, args.ptrs, scalars, args.workspace, params);
  return {};
}

Status reset_reductions(HandleImpl& h, const codegen::Layout& L, const codegen::PointwiseParams& params) {
  for (size_t i = 0; i < L.reductions.size(); ++i) {
    const auto& r = L.reductions[i];
    if (auto s = fill32(h, params.acc[i], identity_bits(r.mode), static_cast<size_t>(r.volume)); !s.ok()) return s;
  }
  return {};
}

Status run_finalize(HandleImpl& h, const codegen::Layout& L, CUfunction finalize, codegen::PointwiseParams& params) {
  if (!L.needs_finalize()) return {};
  int64_t partial_volume = 1;
  for (const auto& r : L.reductions)
    if (!r.full) partial_volume = std::max(partial_volume, r.volume);
  const LaunchDims dims{static_cast<unsigned>(std::min<int64_t>(1024, (partial_volume + 255) / 256)), 256, 0};
  void* args[] = {&params};
  return launch(h, finalize, dims, args, kEpilogueFinalizeKernel);
}

}  // namespace dnngraph::cuda
