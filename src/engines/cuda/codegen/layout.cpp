#include "engines/cuda/codegen/layout.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "engines/cuda/codegen/pointwise_ops.hpp"

namespace dnngraph::cuda::codegen {
namespace {

// Strides of a tensor over the (uncollapsed) domain: size-1 dims of a smaller tensor broadcast.
std::vector<int64_t> domain_strides(const ir::Tensor& t, const std::vector<int64_t>& domain) {
  std::vector<int64_t> s(domain.size(), 0);
  for (size_t i = 0; i < domain.size(); ++i) s[i] = (t.dims[i] == 1) ? 0 : t.strides[i];
  return s;
}

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct Builder {
  const expr::Program& prog;
  const ir::Graph& g;
  const LayoutOptions& o;
  Layout& L;
  std::string& why;
  std::vector<std::vector<int64_t>> full_strides;  // per operand, over the uncollapsed domain

  bool fail(const std::string& msg) {
    why = msg;
    return false;
  }

  std::string tname(int id) const { return "tensor '" + g.tensor(id).name + "'"; }

  bool add_operand(int tensor, Role role, int reduction) {
    const ir::Tensor& t = g.tensor(tensor);
    if (role != Role::ACC && !supported_type(t.dtype))
      return fail(tname(tensor) + ": data type " + std::string(to_string(t.dtype)) +
                  " is not supported by cuda_pointwise_jit");
    Operand op;
    op.tensor = tensor;
    op.role = role;
    op.dtype = role == Role::ACC ? DataType::FLOAT : t.dtype;
    op.reduction = reduction;
    std::vector<int64_t> s = domain_strides(t, prog.domain);
    if (role == Role::STORE)
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] == 0 && prog.domain[i] > 1)
          return fail(tname(tensor) + ": an output with stride 0 on dim " + std::to_string(i) + " would be written twice");
    for (int64_t x : s)
      if (x < 0) return fail(tname(tensor) + ": negative strides are not supported");
    L.operands.push_back(op);
    full_strides.push_back(std::move(s));
    return true;
  }

  bool collect() { return collect_operands(prog, false, L, *this) && check_counts(L, "tensors", why); }

  bool add_reduction(int tensor) {
    Reduction r;
    if (!describe_reduction(prog, g, tensor, L.volume, r, why)) return false;
    const ReductionMode mode = r.mode;
    if (o.deterministic && !r.full && order_dependent(mode))
      return fail(tname(tensor) + ": a deterministic " + std::string(to_string(mode)) +
                  " over part of the dims is not supported (only full reductions run in two passes)");
    r.in_output = r.dtype == DataType::FLOAT && !expr::reduction_needs_finalize(mode) && !(o.deterministic && r.full);
    L.reductions.push_back(r);
    if (!r.full) {
      L.reductions.back().operand = static_cast<int>(L.operands.size());
      return add_operand(tensor, Role::ACC, static_cast<int>(L.reductions.size()) - 1);
    }
    return true;
  }

  // The domain's axes, outermost first, in the memory order of the operand that moves the most
  // bytes per element (an output first): threads then walk memory in order whatever the logical
  // dims say, so a channels-last tensor is read in 16-byte vectors along C instead of with a stride
  // of C along W. Axes the primary operand does not walk (stride 0) keep their logical place.
  std::vector<size_t> walk_order() const {
    const size_t n = prog.domain.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    int primary = -1;
    for (size_t k = 0; k < L.operands.size(); ++k) {
      const Operand& op = L.operands[k];
      if (op.role == Role::ACC) continue;
      const bool better = primary < 0 || (op.role == Role::STORE && L.operands[primary].role != Role::STORE);
      if (better) primary = static_cast<int>(k);
    }
    if (primary < 0) return order;
    const auto& st = full_strides[static_cast<size_t>(primary)];
    std::vector<size_t> walked;  // the axes it walks, in their logical slots, re-sorted by stride
    for (size_t a = 0; a < n; ++a)
      if (st[a] != 0) walked.push_back(a);
    std::vector<size_t> sorted = walked;
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) { return st[a] > st[b]; });
    for (size_t i = 0; i < walked.size(); ++i) order[walked[i]] = sorted[i];
    return order;
  }

  // Merges neighbouring dims that every operand walks as one (stride[a] == stride[a+1] * dim[a+1]),
  // drops size-1 dims; GEN_INDEX axes stay dims of their own.
  void collapse() {
    const size_t n = prog.domain.size();
    std::vector<bool> is_index(n, false);
    for (const auto& in : prog.code)
      if (in.kind == expr::InstrKind::INDEX && in.axis >= 0 && static_cast<size_t>(in.axis) < n) is_index[in.axis] = true;
    struct Group {
      int64_t size;
      std::vector<int64_t> strides;
      bool index;
      std::vector<size_t> axes;
    };
    std::vector<Group> groups;  // innermost first
    const std::vector<size_t> order = walk_order();
    for (size_t i = n; i-- > 0;) {
      const size_t a = order[i];
      if (prog.domain[a] == 1) continue;
      bool merge = !groups.empty() && !is_index[a] && !groups.back().index;
      for (size_t k = 0; merge && k < full_strides.size(); ++k)
        merge = full_strides[k][a] == groups.back().strides[k] * groups.back().size;
      if (merge) {
        groups.back().size *= prog.domain[a];
        groups.back().axes.push_back(a);
      } else {
        Group gr{prog.domain[a], {}, is_index[a], {a}};
        for (const auto& s : full_strides) gr.strides.push_back(s[a]);
        groups.push_back(std::move(gr));
      }
    }
    if (groups.empty()) groups.push_back(Group{1, std::vector<int64_t>(full_strides.size(), 0), false, {}});
    std::reverse(groups.begin(), groups.end());
    L.dim_of_axis.assign(n, -1);
    for (size_t d = 0; d < groups.size(); ++d) {
      L.dims.push_back(groups[d].size);
      for (size_t a : groups[d].axes) L.dim_of_axis[a] = static_cast<int>(d);
    }
    for (size_t k = 0; k < L.operands.size(); ++k)
      for (const auto& gr : groups) L.operands[k].strides.push_back(gr.strides[k]);
  }

  // The widest vector (16 bytes of the widest type walked along the innermost dim; broadcast
  // operands are read once per vector and do not count) that divides the innermost dim, then each
  // operand's access along it.
  void choose_vectors() {
    int64_t widest = 1;
    for (const auto& op : L.operands)
      if (op.role != Role::ACC && op.strides.back() != 0) widest = std::max(widest, size_of(op.dtype));
    int v = static_cast<int>(16 / widest);
    const int64_t inner = L.dims.back();
    while (v > 1 && inner % v != 0) v /= 2;
    L.vec = v;
    const int r = L.rank();
    for (auto& op : L.operands) {
      const int64_t s = op.strides[static_cast<size_t>(r - 1)];
      bool aligned = s == 1;
      for (int d = 0; d + 1 < r && aligned; ++d) aligned = op.strides[static_cast<size_t>(d)] % v == 0;
      op.inner = s == 0 ? Access::BCAST : (aligned && v > 1 && op.role != Role::ACC) ? Access::VEC : Access::STRIDED;
    }
  }

  void choose_index_width() {
    int64_t max_offset = L.volume;
    for (const auto& op : L.operands) {
      int64_t m = 0;
      for (size_t d = 0; d < L.dims.size(); ++d) m += (L.dims[d] - 1) * op.strides[d];
      max_offset = std::max(max_offset, m + 1);
    }
    L.wide_index = max_offset >= (int64_t{1} << 31);
  }

  void place_workspace() {
    int64_t off = 0;
    for (auto& r : L.reductions) {
      const bool needs_acc = !r.in_output && !(r.full && L.deterministic);
      if (!needs_acc) continue;
      r.acc_offset = off;
      off = align_up(off + r.volume * 4, 256);
    }
    if (L.deterministic && L.full_count() > 0) {
      L.partials_offset = off;
      off = align_up(off + int64_t{4} * L.full_count() * L.grid, 256);
    }
    L.workspace_bytes = off;
  }
};

}  // namespace

bool check_counts(const Layout& L, const char* what, std::string& why) {
  const auto over = [&](size_t n, int limit, const std::string& noun) {
    if (static_cast<int64_t>(n) <= limit) return false;
    why = std::to_string(n) + " " + noun + "; the kernel takes at most " + std::to_string(limit);
    return true;
  };
  return !over(L.operands.size(), kMaxOperands, what) && !over(L.scalars.size(), kMaxScalars, "scalars") &&
         !over(L.reductions.size(), kMaxReductions, "reductions");
}

bool supported_type(DataType t) {
  switch (t) {
    case DataType::FLOAT: case DataType::HALF: case DataType::BFLOAT16: case DataType::INT8:
    case DataType::INT32: case DataType::BOOLEAN: case DataType::UINT8: case DataType::FP8_E4M3:
    case DataType::FP8_E5M2:
      return true;
    default:
      return false;
  }
}

bool is_dense(const ir::Tensor& t) {
  std::vector<size_t> order(t.dims.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.strides[a] < t.strides[b]; });
  int64_t expect = 1;
  for (size_t i : order) {
    if (t.dims[i] == 1) continue;
    if (t.strides[i] != expect) return false;
    expect *= t.dims[i];
  }
  return true;
}

bool describe_reduction(const expr::Program& prog, const ir::Graph& g, int tensor, int64_t volume, Reduction& r,
                        std::string& why) {
  const ir::Tensor& t = g.tensor(tensor);
  const std::string name = "tensor '" + t.name + "'";
  ReductionMode mode = ReductionMode::NOT_SET;
  for (const auto& in : prog.code)
    if (in.kind == expr::InstrKind::REDUCE && in.tensor == tensor) mode = in.reduce;
  if (!supported_type(t.dtype)) {
    why = name + ": data type " + std::string(to_string(t.dtype)) + " is not supported";
    return false;
  }
  if (!is_dense(t)) {
    why = name + ": a reduction output must be densely packed";
    return false;
  }
  r = Reduction{};
  r.tensor = tensor;
  r.mode = mode;
  r.dtype = t.dtype;
  r.volume = t.volume();
  r.full = r.volume == 1;
  r.inv_count = static_cast<double>(r.volume) / static_cast<double>(volume);
  return true;
}

uint32_t identity_bits(ReductionMode m) {
  switch (m) {
    case ReductionMode::MUL: return 0x3f800000u;  // 1.0f
    case ReductionMode::MIN: return 0x7f800000u;  // +inf
    case ReductionMode::MAX: return 0xff800000u;  // -inf
    default: return 0;                            // sums, AMAX (of |x| >= 0)
  }
}

bool order_dependent(ReductionMode m) {
  return !(m == ReductionMode::MIN || m == ReductionMode::MAX || m == ReductionMode::AMAX);
}

int Layout::full_count() const {
  return static_cast<int>(std::count_if(reductions.begin(), reductions.end(), [](const Reduction& r) { return r.full; }));
}

bool Layout::needs_finalize() const {
  return std::any_of(reductions.begin(), reductions.end(), [](const Reduction& r) { return !r.in_output; });
}

int Layout::operand_of(int tensor) const {
  for (size_t i = 0; i < operands.size(); ++i)
    if (operands[i].tensor == tensor && operands[i].role != Role::ACC) return static_cast<int>(i);
  return -1;
}

int Layout::scalar_of(int tensor) const {
  for (size_t i = 0; i < scalars.size(); ++i)
    if (scalars[i] == tensor) return static_cast<int>(i);
  return -1;
}

int Layout::reduction_of(int tensor) const {
  for (size_t i = 0; i < reductions.size(); ++i)
    if (reductions[i].tensor == tensor) return static_cast<int>(i);
  return -1;
}

std::string Layout::describe() const {
  std::ostringstream os;
  os << "dims=[";
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
  os << "] vec=" << vec << " unroll=" << unroll << (wide_index ? " i64" : " i32") << (dynamic ? " dynamic" : "")
     << (deterministic ? " deterministic" : "") << " access=";
  for (const auto& op : operands) os << "VBS"[static_cast<int>(op.inner)];
  return os.str();
}

bool plan_layout(const expr::Program& prog, const ir::Graph& g, const LayoutOptions& o, Layout& out,
                 std::string& why_not) {
  if (!has_expressions(prog, why_not)) return false;
  out = Layout{};
  out.dynamic = o.dynamic;
  out.deterministic = o.deterministic;
  out.unroll = std::max(1, o.unroll);
  out.grid = std::max(1, o.grid);
  out.volume = 1;
  for (int64_t d : prog.domain) out.volume *= d;
  if (prog.domain.empty() || out.volume <= 0) {
    why_not = "the fused domain is empty";
    return false;
  }
  if (static_cast<int>(prog.domain.size()) > 12) {
    why_not = "the fused domain has more than 12 dims";
    return false;
  }
  Builder b{prog, g, o, out, why_not, {}};
  if (!b.collect()) return false;
  b.collapse();
  if (out.rank() > kMaxRank) {
    why_not = "the fused domain has " + std::to_string(out.rank()) + " dims after merging; the kernel takes at most " +
              std::to_string(kMaxRank);
    return false;
  }
  b.choose_vectors();
  b.choose_index_width();
  b.place_workspace();
  return true;
}

}  // namespace dnngraph::cuda::codegen
