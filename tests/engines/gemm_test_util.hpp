// Helpers for the CUDA GEMM and convolution engine tests: a graph run on ref (host) and on one
// CUDA engine (device buffers, outputs poisoned with NaN before every plan), compared element by
// element; and the generated sources of a graph's anchor partition for the NVRTC compile tests.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/dims.hpp"
#include "dnngraph/dnngraph.hpp"
#include "dnngraph/kernel_cache.hpp"
#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "planning/engine.hpp"
#include "runtime/handle_impl.hpp"
#include "engines/test_cuda_util.hpp"
#include "graph/graph_impl.hpp"
#include "ref_test_util.hpp"
#include "runtime/memory.hpp"

namespace gemm_test {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
using ref_test::Build;

// One cache for every test graph: with dynamic shapes, shapes that differ only in sizes and
// strides share a compiled kernel.
inline std::shared_ptr<dg::KernelCache> shared_cache() {
  static auto cache = std::make_shared<dg::KernelCache>();
  return cache;
}

inline HostTensor packed(const Dims& dims, dg::DataType t) { return ref_test::make_tensor(dims, test_dims::packed(dims), t); }

inline void fill_random(HostTensor& h, std::mt19937& rng, double lo = -1, double hi = 1) { h.randomize(rng, lo, hi); }

// A [batch..., rows, cols], random, with its rows (or columns, when MN-major) padded to a multiple of 8
// elements, as real leading dimensions are, so that 16-byte loads and TMA apply.
inline HostTensor operand(const Dims& batch, int64_t rows, int64_t cols, bool transposed, dg::DataType t, std::mt19937& rng,
                   bool pad = true) {
  Dims dims = batch;
  dims.push_back(rows);
  dims.push_back(cols);
  const int64_t inner = transposed ? rows : cols, outer = transposed ? cols : rows;
  const int64_t ld = pad ? (inner + 7) / 8 * 8 : inner;
  Dims strides(dims.size());
  strides[dims.size() - (transposed ? 2 : 1)] = 1;
  strides[dims.size() - (transposed ? 1 : 2)] = ld;
  int64_t running = ld * outer;
  for (size_t i = batch.size(); i-- > 0;) {
    strides[i] = running;
    running *= batch[i];
  }
  HostTensor h = ref_test::make_tensor(dims, strides, t);
  fill_random(h, rng);
  return h;
}

struct Expect {
  double tol = -1;    // relative; < 0: by the output's type
  double floor = 1;   // |want| below this is compared absolutely against tol * floor
};

// Runs `build` on ref and on `engine` (plan indices 0 .. max_plans-1, each checked to be that
// engine in one partition; with `only`, just the plans whose name holds it) and compares every
// output; the names of the plans run go to `names` if given.
inline void run_vs_ref(const std::string& engine, std::vector<HostTensor> inputs, const std::vector<HostTensor>& outs,
                       const Build& build, const std::vector<Expect>& expect, int max_plans = 1,
                       std::vector<std::string>* names = nullptr, const std::string& only = "") {
  std::vector<HostTensor> want;
  auto s = ref_test::run_build_on_ref(inputs, outs, build, want);
  ASSERT_TRUE(s.ok()) << s.to_string();

  std::string why;
  auto handle = dnngraph::cuda::testing::cuda_handle(why);
  ASSERT_TRUE(handle) << why;
  dg::HandleImpl& h = impl_of(*handle);
  dg::Graph g;
  std::vector<HostTensor> got;
  dg::VariantPack host_pack;
  std::vector<dg::TensorPtr> ins;
  const std::vector<dg::TensorPtr> outputs = ref_test::declare_graph(g, inputs, outs, build, got, host_pack, &ins);
  g.set_dynamic_shape_enabled(true).set_kernel_cache(shared_cache());
  g.select_engines({engine});
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  s = g.check_support(*handle);
  ASSERT_TRUE(s.ok()) << s.to_string() << "\n" << g.explain();
  // Device copies of the inputs; outputs poisoned again before every plan.
  std::vector<dg::memory::Buffer> in_dev, out_dev;
  dg::VariantPack pack;
  for (size_t i = 0; i < ins.size(); ++i) {
    in_dev.emplace_back(h, inputs[i].bytes.size());
    ASSERT_TRUE(in_dev.back().status().ok());
    ASSERT_TRUE(dg::memory::copy_to_device(h, in_dev.back().get(), inputs[i].bytes.data(), inputs[i].bytes.size()).ok());
    pack[ins[i]] = in_dev.back().get();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    out_dev.emplace_back(h, got[i].bytes.size());
    ASSERT_TRUE(out_dev.back().status().ok());
    pack[outputs[i]] = out_dev.back().get();
  }
  const int64_t plans = std::min<int64_t>(max_plans, g.get_execution_plan_count());
  ASSERT_GE(plans, 1);
  for (int64_t idx = 0; idx < plans; ++idx) {
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(idx, name).ok());
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    s = g.build_plan_at_index(*handle, idx);
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(name.rfind(engine, 0), 0u) << name;
    EXPECT_EQ(name.find(" + "), std::string::npos) << "more than one partition: " << name;
    if (names) names->push_back(name);
    for (size_t i = 0; i < outputs.size(); ++i) {
      HostTensor poison = outs[i];  // NaN in every slot
      ASSERT_TRUE(dg::memory::copy_to_device(h, out_dev[i].get(), poison.bytes.data(), poison.bytes.size()).ok());
    }
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size_plan_at_index(idx, ws).ok());
    dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
    s = g.execute_plan_at_index(*handle, pack, workspace.get(), idx, ws);
    ASSERT_TRUE(s.ok()) << name << ": " << s.to_string();
    ASSERT_TRUE(dg::memory::synchronize(h).ok());
    for (size_t i = 0; i < outputs.size(); ++i) {
      ASSERT_TRUE(dg::memory::copy_to_host(h, got[i].bytes.data(), out_dev[i].get(), got[i].bytes.size()).ok());
      SCOPED_TRACE(name + ", output " + std::to_string(i));
      const Expect e = i < expect.size() ? expect[i] : Expect{};
      ref_test::expect_near(got[i], [&](const Dims& ix) { return want[i].get(ix); }, e.tol, e.floor);
    }
  }
}

// The anchor partition of a graph built on the CPU (codegen needs no GPU).
struct Lowered {
  const dg::ir::Graph* ir = nullptr;
  std::vector<dg::Partition> parts;
};

inline ::testing::AssertionResult lower_graph(dg::Graph& g, Lowered& out) {
  dg::Handle cpu(dg::Device::cpu());
  if (auto s = g.validate(); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  if (auto s = g.build_operation_graph(cpu); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  out.ir = impl_of(g).ir.get();
  if (auto s = dg::partition_graph(*out.ir, out.parts); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  for (const auto& p : out.parts)
    if (dg::cuda::anchor_node(p) >= 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no anchored partition";
}

// A graph holding one matmul, lowered on the CPU (lower_matmul): p is its anchored partition.
struct LoweredMatmul {
  dg::Graph g;
  Lowered low;
  const dg::Partition* p = nullptr;
};
inline ::testing::AssertionResult lower_matmul(LoweredMatmul& f) {
  if (auto r = lower_graph(f.g, f.low); !r) return r;
  for (const auto& p : f.low.parts)
    if (p.anchor >= 0) f.p = &p;
  return f.p ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << "no partition with a matmul";
}

// g lowered on the CPU: `check` runs on each anchored partition, its matmul described; a fatal
// failure in it ends the walk.
inline void for_each_matmul(dg::Graph& g,
                            const std::function<void(const dg::Partition&, dg::cuda::gemm::MatmulPieces&, const Lowered&)>& check) {
  Lowered low;
  ASSERT_TRUE(gemm_test::lower_graph(g, low));
  for (const auto& p : low.parts) {
    if (p.anchor < 0) continue;
    dg::cuda::gemm::MatmulPieces pieces;
    std::string why;
    ASSERT_TRUE(dg::cuda::gemm::describe_matmul_graph(p, pieces.mp, why)) << why;
    ASSERT_NO_FATAL_FAILURE(check(p, pieces, low));
  }
}

// Whether generated source calls dg::<kernel><KernelConfig>(...) (kernel may be a name's tail) with
// a KernelConfig whose members have these values, each its own enumerator, and the epilogue.
inline ::testing::AssertionResult instantiates(const std::string& src, const std::string& kernel,
                                               const std::vector<std::pair<std::string, std::string>>& members) {
  if (src.find(kernel + "<KernelConfig>(") == std::string::npos)
    return ::testing::AssertionFailure() << "no " << kernel << "<KernelConfig> in\n" << src;
  if (src.find("  using Epilogue = dg_gen::Epilogue;\n") == std::string::npos)
    return ::testing::AssertionFailure() << "no Epilogue member in\n" << src;
  for (const auto& [name, value] : members)
    if (src.find("{ " + name + " = " + value + " };\n") == std::string::npos)
      return ::testing::AssertionFailure() << "no member " << name << " = " << value << " in\n" << src;
  return ::testing::AssertionSuccess();
}

// NVRTC's compile of `src` for `arch` fails where NVRTC fails and where ptxas serialized the
// kernel's wgmma (C7518, C7515: each waits for the one before, the tensor pipe drains every k step;
// the stream-K kernel that issued a wgmma in its epilogue did, 2026-12-08).
inline ::testing::AssertionResult compiles_unserialized(const std::string& src, const char* file, const char* arch,
                                                        std::vector<uint8_t>* cubin_out = nullptr) {
  std::vector<uint8_t> cubin;
  std::string log;
  const dg::Status s = dg::cuda::nvrtc_compile(src, file, arch, {}, cubin, &log);
  if (!s.ok()) return ::testing::AssertionFailure() << s.to_string() << "\n---- source:\n" << src;
  if (dg::cuda::ptxas_serialized_wgmma(log))
    return ::testing::AssertionFailure() << "ptxas serialized the wgmma:\n" << log;
  if (cubin_out) *cubin_out = std::move(cubin);
  return ::testing::AssertionSuccess();
}

// A CUDA target without a device, for knob spaces and estimates.
struct FakeGpu {
  dg::HandleImpl handle;
  dg::Target target;
  FakeGpu(int sm_version, double peak_flops, double peak_bytes_per_s, int multiprocessors) {
    handle.info.sm_version = sm_version;
    handle.info.peak_flops = peak_flops;
    handle.info.peak_bytes_per_s = peak_bytes_per_s;
    handle.info.multiprocessors = multiprocessors;
    target.handle = &handle;
  }
  FakeGpu(const FakeGpu&) = delete;
  FakeGpu& operator=(const FakeGpu&) = delete;
};
// An sm_90 with an H200's peaks; an sm_80 with an A100's.
struct FakeHopper : FakeGpu {
  FakeHopper() : FakeGpu(90, 989e12, 4.8e12, 132) {}
};
struct FakeAmpere : FakeGpu {
  FakeAmpere() : FakeGpu(80, 312e12, 2e12, 108) {}
};

}  // namespace gemm_test
