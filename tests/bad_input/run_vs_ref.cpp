#include "bad_input/run_vs_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_set>
#include <vector>

#include "core/checked.hpp"
#include "core/dtype.hpp"
#include "graph/graph_impl.hpp"

namespace bad_input {
namespace {

namespace dg = dnngraph;

constexpr unsigned char kPoison = 0xFF;  // NaN in every float type
constexpr unsigned char kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

// One user tensor's memory: its span (gaps included) and guard bytes after it.
struct Buffer {
  dg::TensorPtr tensor;
  bool is_output = false;
  int64_t span = 0;  // elements from the base pointer to the last element, plus one
  std::vector<unsigned char> bytes;
  void* data() { return bytes.data(); }
};

// The graph's non-virtual tensors, each once; outputs are those a node writes.
std::vector<Buffer> user_tensors(const dg::Graph& g) {
  const auto& nodes = dg::impl_of(g).nodes;
  std::unordered_set<const dg::TensorAttr*> produced, seen;
  for (const auto& n : nodes)
    for (const auto& t : n.outputs) produced.insert(t.get());
  std::vector<Buffer> out;
  auto visit = [&](const dg::TensorPtr& t) {
    if (t && !t->get_is_virtual() && seen.insert(t.get()).second)
      out.push_back(Buffer{t, produced.count(t.get()) > 0, 0, {}});
  };
  for (const auto& n : nodes) {
    for (const auto& t : n.inputs) visit(t);
    for (const auto& t : n.outputs) visit(t);
  }
  return out;
}

// Calls fn(element offset) for every element of dims/strides.
template <class Fn>
void for_each_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, Fn fn) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) off += idx[k] * strides[k];
    fn(off);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// A small multiple of 1/8 (an integer for integer types), exact in every type.
double pattern(int64_t offset, dg::DataType t) {
  const int64_t k = (offset * 37 + 11) % 23 - 11;
  if (t == dg::DataType::BOOLEAN) return k > 0 ? 1.0 : 0.0;
  if (t == dg::DataType::UINT8) return static_cast<double>(k + 11);
  return dg::is_integral(t) ? static_cast<double>(k) : static_cast<double>(k) / 8.0;
}

// Sizes every buffer (false when one is too large to run here), fills inputs, poisons outputs.
bool allocate(std::vector<Buffer>& buffers, const RunLimits& limits) {
  for (auto& b : buffers) {
    const auto& t = *b.tensor;
    const int64_t size = dg::size_of(t.get_data_type());
    int64_t elements = 0;  // a stride-0 view may hold far more elements than its span
    if (size <= 0 || !dg::checked::volume(t.get_dim(), elements) || elements > limits.max_elements ||
        !dg::checked::max_offset(t.get_dim(), t.get_stride(), b.span) || !dg::checked::add(b.span, 1, b.span) ||
        b.span > limits.max_elements)
      return false;
    b.bytes.assign(static_cast<size_t>(b.span * size) + kGuardBytes, kGuard);
    std::memset(b.bytes.data(), kPoison, static_cast<size_t>(b.span * size));
    if (b.is_output) continue;
    const double value = t.get_value().value_or(0.5);
    if (t.get_is_pass_by_value())
      dg::dtype::store(b.data(), t.get_data_type(), 0, value);
    else
      for_each_offset(t.get_dim(), t.get_stride(), [&](int64_t off) {
        dg::dtype::store(b.data(), t.get_data_type(), off, pattern(off, t.get_data_type()));
      });
  }
  return true;
}

dg::UidVariantPack pack_of(std::vector<Buffer>& buffers) {
  dg::UidVariantPack pack;
  for (auto& b : buffers) pack[b.tensor->get_uid()] = b.data();
  return pack;
}

dg::Status build_steps(dg::Graph& g, const dg::Handle& handle, std::string& stage) {
  stage = "validate";
  if (auto s = g.validate(); !s.ok()) return s;
  stage = "build_operation_graph";
  if (auto s = g.build_operation_graph(handle); !s.ok()) return s;
  stage = "create_execution_plans";
  if (auto s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); !s.ok()) return s;
  stage = "check_support";
  if (auto s = g.check_support(handle); !s.ok()) return s;
  stage = "build_plans";
  return g.build_plans(handle);
}

// "output 'Y' element 3 (offset 7): engines 0.5, ref 0.25" for the first element that differs
// beyond the tolerance; empty when all agree.
std::string compare_values(const Buffer& got, const Buffer& want) {
  const auto& t = *got.tensor;
  const dg::DataType type = t.get_data_type();
  double scale = 1.0;
  for_each_offset(t.get_dim(), t.get_stride(), [&](int64_t off) {
    const double w = dg::dtype::load(want.bytes.data(), type, off);
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  });
  const double rtol = tolerance_of(type);
  std::string first;
  int64_t element = 0;
  for_each_offset(t.get_dim(), t.get_stride(), [&](int64_t off) {
    const double g = dg::dtype::load(got.bytes.data(), type, off), w = dg::dtype::load(want.bytes.data(), type, off);
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= rtol * (std::fabs(w) + scale);
    if (!same && first.empty())
      first = "output '" + t.get_name() + "' element " + std::to_string(element) + " (offset " + std::to_string(off) +
              "): engines " + std::to_string(g) + ", ref " + std::to_string(w);
    ++element;
  });
  return first;
}

// An output's gaps still poisoned and its guard bytes intact after `who` ran; else what was written.
std::string untouched_outside_elements(const Buffer& b, const std::string& who) {
  const auto& t = *b.tensor;
  std::vector<bool> is_element(static_cast<size_t>(b.span), false);
  for_each_offset(t.get_dim(), t.get_stride(), [&](int64_t off) { is_element[static_cast<size_t>(off)] = true; });
  const size_t size = static_cast<size_t>(dg::size_of(t.get_data_type()));
  for (size_t off = 0; off < is_element.size(); ++off)
    for (size_t k = 0; k < size && !is_element[off]; ++k)
      if (b.bytes[off * size + k] != kPoison)
        return who + " wrote the gap at offset " + std::to_string(off) + " of output '" + t.get_name() + "'";
  for (size_t i = b.bytes.size() - kGuardBytes; i < b.bytes.size(); ++i)
    if (b.bytes[i] != kGuard) return who + " wrote past the end of output '" + t.get_name() + "'";
  return {};
}

// What went wrong with one user tensor: a value, a gap or guard written, an input changed.
std::string check_tensor(const Buffer& engines, const Buffer& ref, const Buffer& pristine) {
  if (!engines.is_output) {
    if (engines.bytes != pristine.bytes) return "the engines wrote input '" + engines.tensor->get_name() + "'";
    if (ref.bytes != pristine.bytes) return "ref wrote input '" + ref.tensor->get_name() + "'";
    return {};
  }
  if (auto m = untouched_outside_elements(engines, "the engines"); !m.empty()) return m;
  if (auto m = untouched_outside_elements(ref, "ref"); !m.empty()) return m;
  return compare_values(engines, ref);
}

// Executes the built graph on `buffers`; too_large: its workspace is beyond the limits (nothing ran).
dg::Status execute(const dg::Graph& g, const dg::Handle& handle, std::vector<Buffer>& buffers, const RunLimits& limits,
                   bool& too_large) {
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  too_large = ws > limits.max_workspace_bytes;
  if (too_large) return {};
  std::vector<unsigned char> workspace(static_cast<size_t>(ws));
  return g.execute(handle, pack_of(buffers), ws ? workspace.data() : nullptr, ws);
}

}  // namespace

double tolerance_of(dg::DataType t) {
  switch (t) {
    case dg::DataType::DOUBLE:
      return 1e-9;
    case dg::DataType::FLOAT:
      return 1e-4;
    case dg::DataType::HALF:
      return 4e-3;
    case dg::DataType::BFLOAT16:
      return 2e-2;
    case dg::DataType::FP8_E4M3:
      return 0.13;
    case dg::DataType::FP8_E5M2:
      return 0.26;
    default:
      return 0.0;  // integers and booleans are exact
  }
}

RunResult run_json_vs_ref(const std::string& json, const dg::Handle& handle, const RunLimits& limits) {
  RunResult r;
  auto mismatch = [&r](std::string what) {
    r.mismatch = std::move(what);
    return r;
  };
  dg::Graph engines, ref;
  r.stage = "from_json";
  if (r.status = dg::Graph::from_json(json, engines); !r.status.ok()) return r;
  if (!dg::Graph::from_json(json, ref).ok()) return mismatch("the JSON read once but not twice");
  ref.select_engines({"ref"});
  if (r.status = build_steps(engines, handle, r.stage); !r.status.ok()) return r;
  std::string ref_stage;
  if (auto s = build_steps(ref, handle, ref_stage); !s.ok())
    return mismatch("the engines accept the graph but ref fails at " + ref_stage + ": " + s.to_string());
  std::vector<Buffer> ins_outs = user_tensors(engines);
  r.stage = "execute";
  if (!allocate(ins_outs, limits)) return r;
  std::vector<Buffer> ref_bufs = ins_outs;  // the same inputs, poisoned outputs of its own
  const std::vector<Buffer> pristine = ins_outs;
  bool too_large = false;
  if (r.status = execute(engines, handle, ins_outs, limits, too_large); !r.status.ok() || too_large) return r;
  if (auto s = execute(ref, handle, ref_bufs, limits, too_large); !s.ok() || too_large)
    return mismatch("ref fails to execute what the engines ran: " + s.to_string());
  r.executed = true;
  for (size_t i = 0; i < ins_outs.size() && r.mismatch.empty(); ++i)
    r.mismatch = check_tensor(ins_outs[i], ref_bufs[i], pristine[i]);
  return r;
}

}  // namespace bad_input
