// cuda_sdpa_backward_flash against the reference engine on the GPU (skipped without one): seeded
// random shapes (lengths that fit no 64-tile, GQA/MQA, BHSD and BSHD, every mask, padding masks),
// bf16 and fp16 inputs, bf16/fp16/fp32 gradients, head dims 8..128, fully masked and padded rows,
// each on both cores (mode A's plan: wgmma on sm_90; the deterministic plan: mma.sync), the same
// bits on a second run of the deterministic core; gradients poisoned with NaN before each run.
// Without a GPU: the engine's rejections.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gemm_test_util.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/sdpa/sdpa_backward_flash.hpp"
#include "engines/test_cuda_util.hpp"
#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "runtime/memory.hpp"
#include "sdpa_backward_test_util.hpp"

namespace {

namespace dg = dnngraph;
using T = dg::DataType;
using sdpa_test::BwdInputs;
using sdpa_test::Grads;
using sdpa_test::Mask;

struct Case : sdpa_test::Case {
  Case() {
    d = dv = 64;
    type = T::BFLOAT16;
  }
};

// Which of the engine's plans a run takes: mode A's first, or the first deterministic one (core 0,
// mma.sync: core 1 sums dQ by atomics).
enum class Core { MODE_A, DETERMINISTIC };

// The backward on the GPU with only cuda_sdpa_backward_flash; tensors copied to device memory.
Grads run_on_gpu(const Case& c, const BwdInputs& in, dg::Handle& gpu, T grad_type = T::NOT_SET,
                 Core core = Core::MODE_A) {
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT).select_engines({"cuda_sdpa_backward_flash"});
  const sdpa_test::BwdTensors t = sdpa_test::add_sdpa_backward(g, c, in);
  Case out_case = c;
  if (grad_type != T::NOT_SET) {
    for (auto& x : {t.DQ, t.DK, t.DV}) x->set_data_type(grad_type);
    out_case.type = grad_type;
  }
  Grads out = sdpa_test::poisoned_grads(out_case);
  if (!sdpa_test::plan_mode_a(g, gpu)) return out;
  if (core == Core::DETERMINISTIC) {
    EXPECT_TRUE(g.deselect_numeric_notes({dg::NumericalNote::NONDETERMINISTIC}).ok());
  }
  dg::Status s = g.build_plans(gpu);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(g.get_plan_name_at_index(0, out.plan_name).ok());
  std::vector<int32_t> sq = in.fwd.seq_q, skv = in.fwd.seq_kv;
  std::vector<std::pair<dg::TensorPtr, std::pair<void*, size_t>>> host{
      {t.Q, {const_cast<unsigned char*>(in.fwd.q.bytes.data()), in.fwd.q.bytes.size()}},
      {t.K, {const_cast<unsigned char*>(in.fwd.k.bytes.data()), in.fwd.k.bytes.size()}},
      {t.V, {const_cast<unsigned char*>(in.fwd.v.bytes.data()), in.fwd.v.bytes.size()}},
      {t.O, {const_cast<unsigned char*>(in.o.bytes.data()), in.o.bytes.size()}},
      {t.DO, {const_cast<unsigned char*>(in.d_o.bytes.data()), in.d_o.bytes.size()}},
      {t.STATS, {const_cast<unsigned char*>(in.stats.bytes.data()), in.stats.bytes.size()}},
      {t.DQ, {out.dq.bytes.data(), out.dq.bytes.size()}},
      {t.DK, {out.dk.bytes.data(), out.dk.bytes.size()}},
      {t.DV, {out.dv.bytes.data(), out.dv.bytes.size()}}};
  if (c.padding) host.push_back({t.SQ, {sq.data(), sq.size() * 4}}), host.push_back({t.SKV, {skv.data(), skv.size() * 4}});
  dg::HandleImpl& hi = impl_of(gpu);
  std::vector<dg::memory::Buffer> device;
  dg::VariantPack pack;
  for (auto& [tensor, buf] : host) {
    device.emplace_back(hi, buf.second);
    EXPECT_TRUE(dg::memory::copy_to_device(hi, device.back().get(), buf.first, buf.second).ok());
    pack[tensor] = device.back().get();
  }
  int64_t ws = 0;
  EXPECT_TRUE(g.get_workspace_size(ws).ok());
  dg::memory::Buffer workspace(hi, static_cast<size_t>(std::max<int64_t>(ws, 16)));
  s = g.execute(gpu, pack, workspace.get());
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_TRUE(dg::memory::synchronize(hi).ok());
  for (auto* x : {&out.dq, &out.dk, &out.dv}) {
    const dg::TensorPtr& tensor = x == &out.dq ? t.DQ : x == &out.dk ? t.DK : t.DV;
    EXPECT_TRUE(dg::memory::copy_to_host(hi, x->bytes.data(), pack[tensor], x->bytes.size()).ok());
  }
  return out;
}

double tolerance(T t) { return t == T::HALF ? 1e-2 : 3e-2; }

class CudaSdpaBackward : public ::testing::Test {
 protected:
  void SetUp() override {
    gpu_ = dg::cuda::testing::cuda_handle(why_);
    DG_SKIP_WITHOUT_GPU(gpu_, why_);
  }
  // Both cores against ref; on sm_90 mode A's plan is the wgmma core's.
  void check(const Case& c, uint32_t seed, T grad_type = T::NOT_SET) {
    SCOPED_TRACE(c.describe());
    const BwdInputs in = sdpa_test::make_backward_inputs(c, seed);
    const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
    for (Core core : {Core::MODE_A, Core::DETERMINISTIC}) {
      const Grads got = run_on_gpu(c, in, *gpu_, grad_type, core);
      SCOPED_TRACE(got.plan_name);
      EXPECT_EQ(got.plan_name.rfind("cuda_sdpa_backward_flash", 0), 0u);
      const bool hopper = impl_of(*gpu_).info.sm_version == 90;
      EXPECT_NE(got.plan_name.find(core == Core::MODE_A && hopper ? "core=1" : "core=0"), std::string::npos);
      sdpa_test::expect_grads_close(c, got, want, tolerance(c.type));
    }
  }
  std::string why_;
  std::unique_ptr<dg::Handle> gpu_;
};

}  // namespace

TEST_F(CudaSdpaBackward, MatchesRefOnRandomShapes) {
  auto vary = [](test_random::IntPicker& pick, int trial, Case& c) {
    c.d = c.dv = trial % 4 == 3 ? 128 : 64;
    c.type = trial % 2 ? T::HALF : T::BFLOAT16;
    c.bshd = trial % 3 == 1;
    sdpa_test::pick_mask_and_bounds(pick, c, trial, 100, 40);
    c.padding = trial % 4 == 2;
  };
  sdpa_test::for_each_random_case<Case>(4242, 16, 200, 230, vary,
                                        [&](const Case& c, int trial) { check(c, static_cast<uint32_t>(trial + 1)); });
}

TEST_F(CudaSdpaBackward, HeadDimsAndGradientTypes) {
  uint32_t seed = 50;
  for (int64_t d : {8, 40, 96, 128}) {
    Case c;
    c.h = 2, c.hk = 1, c.sq = 70, c.skv = 90, c.d = c.dv = d, c.mask = Mask::CAUSAL_BOTTOM_RIGHT;
    check(c, ++seed);
  }
  Case c;
  c.sq = 65, c.skv = 129, c.mask = Mask::SLIDING_WINDOW, c.left = 30;
  check(c, ++seed, T::FLOAT);
  c.type = T::HALF;
  check(c, ++seed, T::HALF);
}

TEST_F(CudaSdpaBackward, FullyMaskedAndPaddedRowsMatchRef) {
  Case c;
  c.h = 2;
  BwdInputs in;
  in.fwd = sdpa_test::fully_masked_inputs(c, 170);  // the first 140 rows see no key
  sdpa_test::forward_on_ref(c, in.fwd, in.o, in.stats);
  in.d_o = sdpa_test::Tensor4({c.b, c.h, c.sq, c.dv}, c.type, c.bshd);
  std::mt19937 rng(9);
  in.d_o.fill_random(rng);
  const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
  for (Core core : {Core::MODE_A, Core::DETERMINISTIC}) {
    const Grads got = run_on_gpu(c, in, *gpu_, T::NOT_SET, core);
    SCOPED_TRACE(got.plan_name);
    sdpa_test::expect_grads_close(c, got, want, tolerance(c.type));
  }
}

TEST_F(CudaSdpaBackward, GradientsTheGraphDoesNotReadAreSkipped) {
  // Only dQ is an output: dK and dV are virtual, have no pointer, and phase 1 is not launched.
  Case c;
  c.sq = 100, c.skv = 80, c.mask = Mask::CAUSAL_BOTTOM_RIGHT;
  const BwdInputs in = sdpa_test::make_backward_inputs(c, 31);
  const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT).select_engines({"cuda_sdpa_backward_flash"});
  const sdpa_test::BwdTensors t = sdpa_test::add_sdpa_backward(g, c, in);
  t.DK->set_output(false);
  t.DV->set_output(false);
  ASSERT_TRUE(sdpa_test::plan_mode_a(g, *gpu_));
  ASSERT_TRUE(g.build_plans(*gpu_).ok());
  dg::HandleImpl& hi = impl_of(*gpu_);
  Grads got = sdpa_test::poisoned_grads(c);
  std::vector<dg::memory::Buffer> device;
  dg::VariantPack pack;
  auto upload = [&](const dg::TensorPtr& x, const void* host, size_t bytes) {
    device.emplace_back(hi, bytes);
    ASSERT_TRUE(dg::memory::copy_to_device(hi, device.back().get(), host, bytes).ok());
    pack[x] = device.back().get();
  };
  upload(t.Q, in.fwd.q.bytes.data(), in.fwd.q.bytes.size());
  upload(t.K, in.fwd.k.bytes.data(), in.fwd.k.bytes.size());
  upload(t.V, in.fwd.v.bytes.data(), in.fwd.v.bytes.size());
  upload(t.O, in.o.bytes.data(), in.o.bytes.size());
  upload(t.DO, in.d_o.bytes.data(), in.d_o.bytes.size());
  upload(t.STATS, in.stats.bytes.data(), in.stats.bytes.size());
  upload(t.DQ, got.dq.bytes.data(), got.dq.bytes.size());
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  dg::memory::Buffer workspace(hi, static_cast<size_t>(std::max<int64_t>(ws, 16)));
  const dg::Status s = g.execute(*gpu_, pack, workspace.get());
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(dg::memory::synchronize(hi).ok());
  ASSERT_TRUE(dg::memory::copy_to_host(hi, got.dq.bytes.data(), pack[t.DQ], got.dq.bytes.size()).ok());
  sdpa_test::expect_close(c, got.dq, want.dq, tolerance(c.type) * 4, "dQ alone");
}

TEST_F(CudaSdpaBackward, SameBitsOnEveryRun) {
  Case c;
  c.b = 2, c.h = 4, c.hk = 1, c.sq = 300, c.skv = 300, c.mask = Mask::CAUSAL;
  const BwdInputs in = sdpa_test::make_backward_inputs(c, 77);
  const Grads a = run_on_gpu(c, in, *gpu_, T::NOT_SET, Core::DETERMINISTIC);
  const Grads b = run_on_gpu(c, in, *gpu_, T::NOT_SET, Core::DETERMINISTIC);
  EXPECT_EQ(a.dq.bytes, b.dq.bytes);
  EXPECT_EQ(a.dk.bytes, b.dk.bytes);
  EXPECT_EQ(a.dv.bytes, b.dv.bytes);
}

// ---- no GPU needed

TEST(CudaSdpaBackwardCompile, KernelsCompileForAmpereAndHopper) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  struct Build {
    T in, out;
    int64_t d;
    const char* arch;
    int core;
  };
  for (const Build& b : {Build{T::BFLOAT16, T::BFLOAT16, 64, "sm_80", 0}, Build{T::HALF, T::FLOAT, 128, "sm_90a", 0},
                         Build{T::BFLOAT16, T::HALF, 40, "sm_86", 0}, Build{T::BFLOAT16, T::BFLOAT16, 128, "sm_90a", 1},
                         Build{T::HALF, T::FLOAT, 64, "sm_90a", 1}, Build{T::BFLOAT16, T::HALF, 40, "sm_90a", 1}}) {
    const std::string src = dg::cuda::sdpa_backward_kernel_source(b.in, b.out, b.d, b.core);
    std::vector<uint8_t> cubin;
    ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_sdpa_backward.cu", b.arch, &cubin)) << b.arch;
    EXPECT_GT(cubin.size(), 1000u);
  }
}

// The engine's verdict on a case, as explain() prints it (planned for the CPU handle: the
// partition rules come before the device rule).
std::string verdict(const Case& c, T grad_type = T::NOT_SET) {
  const BwdInputs in = sdpa_test::make_backward_inputs(c, 3);
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT).select_engines({"cuda_sdpa_backward_flash"});
  const sdpa_test::BwdTensors t = sdpa_test::add_sdpa_backward(g, c, in);
  if (grad_type != T::NOT_SET) t.DK->set_data_type(grad_type);
  EXPECT_TRUE(g.validate().ok());
  EXPECT_TRUE(g.build_operation_graph(cpu).ok());
  EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  EXPECT_FALSE(g.check_support(cpu).ok());
  return g.explain();
}

TEST(CudaSdpaBackwardEngine, RefusesWithReasons) {
  auto expect_reason = [](const std::string& explain, const std::string& reason) {
    EXPECT_NE(explain.find(reason), std::string::npos) << explain;
  };
  Case c;
  c.sq = c.skv = 8;
  c.type = T::FLOAT;
  expect_reason(verdict(c), "node 'attn_bwd', tensor 'Q': data type FLOAT is not supported (HALF or BFLOAT16");
  c = Case{};
  c.sq = c.skv = 8;
  c.dv = 32;
  expect_reason(verdict(c), "node 'attn_bwd', tensor 'V': head dim 32 differs from Q's 64");
  c.d = c.dv = 136;
  expect_reason(verdict(c), "tensor 'Q': head dim 136 is not a multiple of 8 up to 128");
  c.d = c.dv = 64;
  expect_reason(verdict(c, T::FLOAT), "tensor 'attn_bwd::DK': data type FLOAT differs from dQ's BFLOAT16");
  c.d = c.dv = 12;
  expect_reason(verdict(c), "head dim 12 is not a multiple of 8 up to 128");
  c = Case{};
  c.sq = c.skv = 8;
  expect_reason(verdict(c), "runs on CUDA handles");  // a good partition on the CPU handle
}

// The backward node's partition (lowered on the CPU handle: the engines' rules need no GPU).
void lower_backward(const Case& c, bool deterministic, dg::Graph& g, std::vector<dg::Partition>& parts) {
  const BwdInputs in = sdpa_test::make_backward_inputs(c, 5);
  dg::Handle cpu(dg::Device::cpu());
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT);
  sdpa_test::add_sdpa_backward(g, c, in, deterministic);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  ASSERT_TRUE(dg::partition_graph(*impl_of(g).ir, parts).ok());
  ASSERT_EQ(parts.size(), 1u);
}

// The cores by device, without a GPU: on sm_90 the wgmma core first (and NONDETERMINISTIC, since
// dQ's sums arrive in any order), then the deterministic mma.sync core; elsewhere mma.sync alone;
// core=1 refused off Hopper, and for a node that asks for a deterministic algorithm, with the rule.
TEST(CudaSdpaBackwardEngine, CoresByDevice) {
  Case c;
  c.sq = 100, c.skv = 80, c.mask = Mask::CAUSAL;
  dg::Graph g, gd;
  std::vector<dg::Partition> parts, det;
  lower_backward(c, false, g, parts);
  lower_backward(c, true, gd, det);
  const dg::cuda::testing::RulesTarget hopper(90), ampere(80);
  const dg::Target &th = hopper.target, &ta = ampere.target;
  const dg::Engine& e = dg::cuda::sdpa_backward_flash_engine();
  const auto kh = e.knob_space(parts[0], th), ka = e.knob_space(parts[0], ta);
  ASSERT_EQ(kh.size(), 2u);
  EXPECT_EQ(dg::knobs_to_string(kh[0]), "core=1");
  EXPECT_EQ(dg::knobs_to_string(kh[1]), "core=0");
  EXPECT_LT(e.estimate_seconds(parts[0], th, kh[0]), e.estimate_seconds(parts[0], th, kh[1]));
  ASSERT_EQ(ka.size(), 1u);
  EXPECT_EQ(dg::knobs_to_string(ka[0]), "core=0");
  auto nondeterministic = [&](const dg::Knobs& k) {
    const auto notes = e.numerical_notes(parts[0], th, k);
    return std::find(notes.begin(), notes.end(), dg::NumericalNote::NONDETERMINISTIC) != notes.end();
  };
  EXPECT_TRUE(nondeterministic(kh[0]));
  EXPECT_FALSE(nondeterministic(kh[1]));
  EXPECT_GE(e.estimate_seconds(parts[0], ta, kh[0]), 1e9);  // core=1 cannot run on sm_80
  const auto kd = e.knob_space(det[0], th);
  ASSERT_EQ(kd.size(), 1u);
  EXPECT_EQ(dg::knobs_to_string(kd[0]), "core=0");
  EXPECT_GE(e.estimate_seconds(det[0], th, kh[0]), 1e9);
  const std::string src = dg::cuda::sdpa_backward_kernel_source(T::BFLOAT16, T::BFLOAT16, 40, 1);
  EXPECT_NE(src.find("sdpa_backward_wgmma.cuh"), std::string::npos);
  EXPECT_NE(src.find("kHeadDim = 64"), std::string::npos) << src;
}
