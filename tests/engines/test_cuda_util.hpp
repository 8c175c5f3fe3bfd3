// Helpers for the CUDA tests: graphs lowered to generated CUDA source, device buffers, and the
// reference engine as the oracle.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cuda/codegen/emitter.hpp"
#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "planning/engine.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dnngraph::cuda::testing {

namespace dg = dnngraph;

// A graph's partitions as generated pointwise kernels (graph built for the CPU: codegen needs no GPU).
struct Generated {
  std::vector<std::string> sources;
  std::vector<codegen::Layout> layouts;
};

inline ::testing::AssertionResult generate(dg::Graph& g, const codegen::LayoutOptions& o, Generated& out) {
  dg::Handle cpu(dg::Device::cpu());
  if (auto s = g.validate(); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  if (auto s = g.build_operation_graph(cpu); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  const ir::Graph& ir = *impl_of(g).ir;
  std::vector<Partition> parts;
  if (auto s = partition_graph(ir, parts); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  for (const auto& p : parts) {
    expr::Program prog;
    std::string why;
    if (!expr::lower(p, -1, prog, why)) return ::testing::AssertionFailure() << "lower: " << why;
    codegen::Layout L;
    if (!codegen::plan_layout(prog, ir, o, L, why)) return ::testing::AssertionFailure() << "layout: " << why;
    out.sources.push_back(codegen::emit_pointwise(prog, ir, L));
    out.layouts.push_back(L);
  }
  return ::testing::AssertionSuccess();
}

inline dg::TensorPtr input(dg::Graph& g, const std::string& name, std::vector<int64_t> dims, dg::DataType t,
                           std::vector<int64_t> strides = {}) {
  if (strides.empty()) {
    strides.assign(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  }
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
}

inline dg::TensorPtr pw(dg::Graph& g, dg::PointwiseMode m, dg::TensorPtr a, dg::TensorPtr b = nullptr,
                        dg::TensorPtr c = nullptr) {
  auto attr = dg::PointwiseAttr().set_mode(m);
  if (c) return g.pointwise(a, b, c, attr);
  if (b) return g.pointwise(a, b, attr);
  return g.pointwise(a, attr);
}

inline dg::TensorPtr reduce(dg::Graph& g, dg::ReductionMode m, dg::TensorPtr x, std::vector<int64_t> out_dims) {
  auto y = g.reduction(x, dg::ReductionAttr().set_mode(m));
  y->set_dim(out_dims);
  return y;
}

// Set by bench/gpu.sh on GPU machines: there a GPU test that cannot get its GPU fails, not skips.
inline bool gpu_required() {
  const char* v = std::getenv("DNNGRAPH_REQUIRE_GPU");
  return v && *v && std::string(v) != "0";
}

// A usable CUDA handle, or null (the test then skips, or fails where a GPU is required).
inline std::unique_ptr<dg::Handle> cuda_handle(std::string& why) {
  if (device_count() == 0) {
    why = driver() ? "the CUDA driver reports no device" : driver_error();
    return nullptr;
  }
  auto h = std::make_unique<dg::Handle>(dg::Device::cuda(0));
  if (!h->status().ok()) {
    why = h->status().to_string();
    return nullptr;
  }
  if (!nvrtc()) {
    why = nvrtc_error();
    return nullptr;
  }
  return h;
}

// In a fixture's SetUp: skips (or fails, where a GPU is required) when `handle` is null.
#define DG_SKIP_WITHOUT_GPU(handle, why)                                                         \
  do {                                                                                           \
    if (!(handle)) {                                                                             \
      if (::dnngraph::cuda::testing::gpu_required()) FAIL() << "DNNGRAPH_REQUIRE_GPU: " << (why); \
      GTEST_SKIP() << "no CUDA device: " << (why);                                               \
    }                                                                                            \
  } while (0)

// In a test body: declares `handle_var`, a CUDA handle, or skips (fails where a GPU is required).
#define DG_REQUIRE_CUDA(handle_var)                                              \
  std::string cuda_skip_reason;                                                  \
  auto handle_var = ::dnngraph::cuda::testing::cuda_handle(cuda_skip_reason);    \
  DG_SKIP_WITHOUT_GPU(handle_var, cuda_skip_reason)

// The fixture of a vendor library's GPU tests: `h_` is a CUDA handle; skips without a GPU or
// without the library (fails instead where a GPU is required). Load/Why: the library's api() and
// error() (its search log).
template <typename Api, const Api* (*Load)(), const std::string& (*Why)()>
class VendorGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = cuda_handle(skip_);
    DG_SKIP_WITHOUT_GPU(h_, skip_);
    if (!Load()) {
      if (gpu_required()) FAIL() << "DNNGRAPH_REQUIRE_GPU: " << Why();
      GTEST_SKIP() << Why();
    }
  }
  std::string skip_;
  std::unique_ptr<dg::Handle> h_;
};

// Host data of a tensor, seeded random in [-2, 2) (never zeros), rounded to its type.
inline std::vector<uint8_t> random_bytes(const ir::Tensor& t, uint32_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.span_bytes()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const int64_t n = t.span_bytes() / size_of(t.dtype);
  for (int64_t i = 0; i < n; ++i) {
    double v = u(rng);
    if (t.dtype == DataType::BOOLEAN) v = v > 0;
    if (t.dtype == DataType::UINT8) v = std::fabs(v) * 60;
    if (t.dtype == DataType::INT8 || t.dtype == DataType::INT32) v = v * 50;
    dtype::store(bytes.data(), t.dtype, i, v);
  }
  return bytes;
}

// Bytes that read back as NaN (or a poison pattern for integer types) in every element.
inline std::vector<uint8_t> poison_bytes(const ir::Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.span_bytes()), 0x7f);
  const int64_t n = t.span_bytes() / size_of(t.dtype);
  if (is_floating(t.dtype))
    for (int64_t i = 0; i < n; ++i) dtype::store(bytes.data(), t.dtype, i, std::nan(""));
  return bytes;
}

// Relative error ||a - b|| / ||b|| over the tensor's elements, with NaN anywhere in a (not in b) a failure.
inline double relative_error(const ir::Tensor& t, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                             std::string& first_bad) {
  double num = 0, den = 0;
  std::vector<int64_t> idx(t.dims.size(), 0);
  const int64_t vol = t.volume();
  for (int64_t n = 0; n < vol; ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * t.strides[i];
    const double x = dtype::load(a.data(), t.dtype, off), y = dtype::load(b.data(), t.dtype, off);
    if (std::isnan(x) != std::isnan(y) || (std::isinf(y) && x != y)) {
      if (first_bad.empty()) first_bad = "element " + std::to_string(n) + ": got " + std::to_string(x) + ", want " + std::to_string(y);
      return INFINITY;
    }
    if (!std::isnan(y) && !std::isinf(y)) {
      num += (x - y) * (x - y);
      den += y * y;
    }
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < t.dims[k]) break;
      idx[k] = 0;
    }
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

// Tolerance on ||got - want|| / ||want|| by the output's type; 1e-2 for the integer types (a value on
// a rounding boundary may land one step away).
inline double tolerance(DataType t) {
  constexpr std::pair<DataType, double> kFloatTolerances[] = {{DataType::FLOAT, 2e-5},    {DataType::HALF, 3e-3},
                                                              {DataType::BFLOAT16, 1e-2}, {DataType::FP8_E4M3, 7e-2},
                                                              {DataType::FP8_E5M2, 1.3e-1}};
  for (const auto& [type, tol] : kFloatTolerances)
    if (type == t) return tol;
  return 1e-2;
}

using Builder = std::function<void(dg::Graph&)>;
using Outputs = std::map<int64_t, std::vector<uint8_t>>;  // bytes by uid

struct RunOptions {
  std::string engine;                      // the only engine allowed
  bool dynamic = false;
  std::shared_ptr<dg::KernelCache> cache;
  int64_t misalign_elements = 0;           // offsets every input and output pointer by this many elements
  uint32_t seed = 1;
};

// Builds the graph on `h` with only options.engine, runs it on seeded random inputs (outputs poisoned
// first) and returns every output's bytes, with the IR graph for comparing them.
inline ::testing::AssertionResult run_graph(const Builder& build, dg::Handle& h, const RunOptions& o, Outputs& out,
                                            std::vector<ir::Tensor>* tensors = nullptr) {
  dg::Graph g;
  build(g);
  g.select_engines({o.engine}).set_dynamic_shape_enabled(o.dynamic);
  if (o.cache) g.set_kernel_cache(o.cache);
  auto fail = [](const char* step, const Status& s) { return ::testing::AssertionFailure() << step << ": " << s.to_string(); };
  if (auto s = g.validate(); !s.ok()) return fail("validate", s);
  if (auto s = g.build_operation_graph(h); !s.ok()) return fail("build_operation_graph", s);
  if (auto s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); !s.ok())
    return fail("create_execution_plans", s) << "\n" << g.explain();
  if (auto s = g.check_support(h); !s.ok()) return fail("check_support", s) << "\n" << g.explain();
  if (auto s = g.build_plans(h); !s.ok()) return fail("build_plans", s);
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return fail("get_workspace_size", s);
  HandleImpl& hi = impl_of(h);
  const ir::Graph& ir = *impl_of(g).ir;
  if (tensors) *tensors = ir.tensors;
  std::vector<memory::Buffer> buffers;
  dg::UidVariantPack pack;
  std::vector<std::pair<int64_t, std::pair<void*, size_t>>> results;
  for (const auto& t : ir.tensors) {
    if (t.is_virtual || t.is_pass_by_value) continue;
    const size_t pad = static_cast<size_t>(o.misalign_elements * size_of(t.dtype));
    const bool is_input = t.producer < 0;
    std::vector<uint8_t> bytes = is_input ? random_bytes(t, o.seed * 7919u + static_cast<uint32_t>(t.uid)) : poison_bytes(t);
    buffers.emplace_back(hi, bytes.size() + pad);
    if (!buffers.back().status().ok()) return fail("allocate", buffers.back().status());
    void* p = static_cast<char*>(buffers.back().get()) + pad;
    if (auto s = memory::copy_to_device(hi, p, bytes.data(), bytes.size()); !s.ok()) return fail("copy_to_device", s);
    pack[t.uid] = p;
    if (!is_input) results.push_back({t.uid, {p, bytes.size()}});
  }
  memory::Buffer workspace(hi, static_cast<size_t>(std::max<int64_t>(ws, 1)));
  if (auto s = g.execute(h, pack, workspace.get(), ws); !s.ok()) return fail("execute", s);
  if (auto s = memory::synchronize(hi); !s.ok()) return fail("synchronize", s);
  for (const auto& [uid, where] : results) {
    std::vector<uint8_t> bytes(where.second);
    if (auto s = memory::copy_to_host(hi, bytes.data(), where.first, bytes.size()); !s.ok()) return fail("copy_to_host", s);
    out[uid] = std::move(bytes);
  }
  return ::testing::AssertionSuccess();
}

// A device buffer of a plan's `ws` bytes, one at least (a plan that needs none still gets a pointer).
inline memory::Buffer workspace_buffer(dg::Handle& h, int64_t ws) {
  return memory::Buffer(impl_of(h), static_cast<size_t>(std::max<int64_t>(ws, 1)));
}

// Buffers for every non-virtual tensor of a built graph on `h` (device memory, or host memory on a
// CPU handle), for tests that run plans one by one: inputs hold the seeded data run_graph gives them
// (seed * 7919 + uid), except those named in `fixed` (int32 data, e.g. sequence lengths); outputs are
// poisoned with NaN, and again by every poison().
struct DeviceRig {
  dg::Handle& h;
  std::vector<memory::Buffer> buffers;
  dg::UidVariantPack pack;
  std::vector<std::pair<const ir::Tensor*, void*>> outputs;

  DeviceRig(dg::Handle& handle, const dg::Graph& g, uint32_t seed = 1,
            const std::map<std::string, std::vector<int32_t>>& fixed = {})
      : h(handle) {
    for (const auto& t : impl_of(g).ir->tensors) {
      if (t.is_virtual || t.is_pass_by_value) continue;
      const bool input = t.producer < 0;
      auto bytes = input ? random_bytes(t, seed * 7919u + static_cast<uint32_t>(t.uid)) : poison_bytes(t);
      if (auto it = fixed.find(t.name); it != fixed.end()) {
        EXPECT_EQ(it->second.size() * 4, bytes.size()) << t.name;
        std::memcpy(bytes.data(), it->second.data(), std::min(bytes.size(), it->second.size() * 4));
      }
      buffers.emplace_back(impl_of(h), bytes.size());
      EXPECT_TRUE(memory::copy_to_device(impl_of(h), buffers.back().get(), bytes.data(), bytes.size()).ok());
      pack[t.uid] = buffers.back().get();
      if (!input) outputs.push_back({&t, buffers.back().get()});
    }
  }
  void poison() {
    for (const auto& [t, p] : outputs) {
      const auto bytes = poison_bytes(*t);
      EXPECT_TRUE(memory::copy_to_device(impl_of(h), p, bytes.data(), bytes.size()).ok());
    }
  }
  Outputs read() {
    Outputs out;
    EXPECT_TRUE(memory::synchronize(impl_of(h)).ok());
    for (const auto& [t, p] : outputs) {
      std::vector<uint8_t> got(static_cast<size_t>(t->span_bytes()));
      EXPECT_TRUE(memory::copy_to_host(impl_of(h), got.data(), p, got.size()).ok());
      out[t->uid] = std::move(got);
    }
    return out;
  }
  // Every output within its type's tolerance (times tol_scale) of `want`.
  void expect_matches(const Outputs& want, const std::string& what, double tol_scale = 1.0) {
    const Outputs got = read();
    for (const auto& [t, p] : outputs) {
      std::string bad;
      const double err = relative_error(*t, got.at(t->uid), want.at(t->uid), bad);
      EXPECT_LE(err, tolerance(t->dtype) * tol_scale) << what << ", output '" << t->name << "': " << bad;
    }
  }
  // Runs g's built plan `plan` `runs` times, outputs poisoned before each, and compares each run
  // with `want` (a plan that makes a CUDA graph on its second call replays it from then on).
  void expect_plan_matches(const dg::Graph& g, int64_t plan, int runs, const Outputs& want, const std::string& what,
                           double tol_scale = 1.0) {
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size_plan_at_index(plan, ws).ok());
    const memory::Buffer workspace = workspace_buffer(h, ws);
    for (int run = 0; run < runs; ++run) {
      poison();
      const Status s = g.execute_plan_at_index(h, pack, workspace.get(), plan, ws);
      ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
      expect_matches(want, what + ", run " + std::to_string(run), tol_scale);
    }
  }
};

// Runs g's built default plans on `h` with `pack`, in a workspace of the size they ask for.
inline ::testing::AssertionResult execute_in_workspace(dg::Graph& g, dg::Handle& h, const dg::UidVariantPack& pack) {
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  const memory::Buffer workspace = workspace_buffer(h, ws);
  if (auto s = g.execute(h, pack, workspace.get(), ws); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  return ::testing::AssertionSuccess();
}

// g's built plans serialized, then deserialized into `loaded` on `h`.
inline ::testing::AssertionResult serialize_and_reload(const dg::Graph& g, dg::Handle& h, dg::Graph& loaded,
                                                       std::vector<uint8_t>& bytes) {
  if (auto s = g.serialize(bytes); !s.ok()) return ::testing::AssertionFailure() << "serialize: " << s.to_string();
  if (auto s = loaded.deserialize(h, bytes); !s.ok())
    return ::testing::AssertionFailure() << "deserialize: " << s.to_string();
  return ::testing::AssertionSuccess();
}

// The same pointers keyed by the graph's tensor objects (populate_cuda_graph takes those).
inline dg::VariantPack uid_pack_as_tensors(const dg::Graph& g, const dg::UidVariantPack& by_uid) {
  dg::VariantPack out;
  auto add = [&](const dg::TensorPtr& t) {
    if (auto it = t ? by_uid.find(t->get_uid()) : by_uid.end(); it != by_uid.end()) out[t] = it->second;
  };
  for (const auto& t : impl_of(g).tensors) add(t);
  for (const auto& n : impl_of(g).nodes)
    for (const auto& t : n.outputs) add(t);
  return out;
}

// A graph's plans recorded by populate_cuda_graph into a CUDA graph and instantiated; the graph and
// its executable are destroyed with this object.
class CapturedGraph {
 public:
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec_) driver()->cuGraphExecDestroy(exec_);
    if (graph_) driver()->cuGraphDestroy(graph_);
  }
  ::testing::AssertionResult capture(dg::Graph& g, dg::Handle& h, const dg::UidVariantPack& pack, void* workspace) {
    if (auto s = check(driver()->cuGraphCreate(&graph_, 0), "cuGraphCreate"); !s.ok()) return failed(s);
    if (auto s = g.populate_cuda_graph(h, uid_pack_as_tensors(g, pack), workspace, graph_); !s.ok()) return failed(s);
    return result(check(driver()->cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiate"));
  }
  // Launches the executable on h's stream.
  ::testing::AssertionResult launch(dg::Handle& h) const {
    return result(check(driver()->cuGraphLaunch(exec_, stream_of(impl_of(h))), "cuGraphLaunch"));
  }

 private:
  static ::testing::AssertionResult failed(const Status& s) { return ::testing::AssertionFailure() << s.to_string(); }
  static ::testing::AssertionResult result(const Status& s) {
    return s.ok() ? ::testing::AssertionSuccess() : failed(s);
  }
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// Runs the graph with options.engine on `h` and with ref on the CPU, and compares every output.
inline void expect_matches_ref(const Builder& build, dg::Handle& h, RunOptions o, double tol_scale = 1.0) {
  Outputs got, want;
  std::vector<ir::Tensor> tensors;
  ASSERT_TRUE(run_graph(build, h, o, got, &tensors));
  dg::Handle cpu(dg::Device::cpu());
  RunOptions ref = o;
  ref.engine = "ref";
  ref.misalign_elements = 0;
  ASSERT_TRUE(run_graph(build, cpu, ref, want));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& t : tensors) {
    if (!got.count(t.uid)) continue;
    std::string bad;
    const double err = relative_error(t, got[t.uid], want[t.uid], bad);
    EXPECT_LE(err, tolerance(t.dtype) * tol_scale)
        << "output '" << t.name << "' (" << to_string(t.dtype) << "): relative error " << err << " " << bad;
  }
}

// A CUDA target of compute capability `sm` for the engines' rules without a GPU (knob spaces,
// estimates): nothing is ever launched on it.
struct RulesTarget {
  dg::HandleImpl handle;
  dg::Target target;
  explicit RulesTarget(int sm) {
    handle.info.sm_version = sm;
    handle.info.peak_flops = 900e12;
    handle.info.peak_bytes_per_s = 4e12;
    target.handle = &handle;
  }
  RulesTarget(const RulesTarget&) = delete;
  RulesTarget& operator=(const RulesTarget&) = delete;
};

}  // namespace dnngraph::cuda::testing
