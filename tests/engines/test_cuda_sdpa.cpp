// cuda_sdpa_flash against the reference engine. Without a GPU: the kernels compile through NVRTC
// (wgmma for sm_90a, mma.sync for sm_80/sm_86), the engine's rejections and configurations. With
// one (the tests skip otherwise): every plan the engine offers (wgmma with and without overlap,
// mma.sync) on seeded random shapes (sequence lengths that fit no tile, GQA/MQA, BHSD and BSHD,
// every mask, padding, stats, bf16/fp16), head dims 8..256, fp32 output, negative and zero scales,
// fully masked rows, and a serialized plan. Outputs are poisoned with NaN before each run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "gemm_test_util.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/sdpa/sdpa_flash.hpp"
#include "engines/cuda/sdpa/sdpa_problem.hpp"
#include "engines/test_cuda_util.hpp"
#include "graph/graph_impl.hpp"
#include "planning/kernel_cache.hpp"
#include "runtime/memory.hpp"
#include "common/scoped_env.hpp"
#include "sdpa_test_util.hpp"

namespace {

namespace dg = dnngraph;
namespace sd = dnngraph::cuda::sdpa;
using T = dg::DataType;

using sdpa_test::Inputs;
using sdpa_test::make_inputs;
using sdpa_test::Mask;
using HostTensor = sdpa_test::Tensor4;

// The CUDA kernels' cases start from head dim 64 and bf16.
struct Case : sdpa_test::Case {
  Case() {
    d = dv = 64;
    type = T::BFLOAT16;
  }
};

// Kernels compiled once per process; also kept in $DNNGRAPH_KERNEL_CACHE_DIR when set (a folder the
// benchmark's --prebuild filled, so that a GPU machine runs the tests without compiling).
std::shared_ptr<dg::KernelCache> shared_cache() {
  static std::shared_ptr<dg::KernelCache> cache = [] {
    auto c = std::make_shared<dg::KernelCache>();
    if (const char* dir = std::getenv("DNNGRAPH_KERNEL_CACHE_DIR"); dir && *dir) c->set_directory(dir);
    return c;
  }();
  return cache;
}

struct Outputs {
  HostTensor o, stats;
  std::vector<std::string> plans;  // every plan the engine offered
};

// Builds the graph for `engine` on `handle` and runs the plan whose name is `plan` (the first when
// empty). Tensors live in host memory on the CPU, in device memory on a GPU.
Outputs run(const Case& c, const Inputs& in, dg::Handle& handle, const std::string& engine, const std::string& plan) {
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT).select_engines({engine}).set_kernel_cache(shared_cache());
  const auto [Q, K, V, SQ, SKV, O, STATS] = sdpa_test::add_sdpa(g, c, in);
  Outputs out;
  sdpa_test::poisoned_results(c, out.o, out.stats);
  if (!sdpa_test::plan_mode_a(g, handle)) return out;
  int64_t index = -1;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    EXPECT_TRUE(g.get_plan_name_at_index(i, name).ok());
    out.plans.push_back(name);
    if (index < 0 && (plan.empty() || name == plan)) index = i;
  }
  EXPECT_GE(index, 0) << "no plan named '" << plan << "'";
  if (index < 0) return out;
  dg::Status s = g.build_plan_at_index(handle, index);
  EXPECT_TRUE(s.ok()) << s.to_string();
  std::vector<int32_t> sq = in.seq_q, skv = in.seq_kv;
  std::vector<std::pair<dg::TensorPtr, void*>> host{{Q, const_cast<unsigned char*>(in.q.bytes.data())},
                                                     {K, const_cast<unsigned char*>(in.k.bytes.data())},
                                                     {V, const_cast<unsigned char*>(in.v.bytes.data())},
                                                     {O, out.o.bytes.data()}};
  std::vector<size_t> sizes{in.q.bytes.size(), in.k.bytes.size(), in.v.bytes.size(), out.o.bytes.size()};
  if (c.padding) {
    host.push_back({SQ, sq.data()}), sizes.push_back(sq.size() * 4);
    host.push_back({SKV, skv.data()}), sizes.push_back(skv.size() * 4);
  }
  if (c.stats) host.push_back({STATS, out.stats.bytes.data()}), sizes.push_back(out.stats.bytes.size());
  dg::VariantPack pack;
  std::vector<dg::memory::Buffer> device;
  dg::HandleImpl& hi = impl_of(handle);
  const bool gpu = hi.device.is_cuda();
  for (size_t i = 0; i < host.size(); ++i) {
    if (!gpu) {
      pack[host[i].first] = host[i].second;
      continue;
    }
    device.emplace_back(hi, sizes[i]);
    EXPECT_TRUE(device.back().status().ok());
    EXPECT_TRUE(dg::memory::copy_to_device(hi, device.back().get(), host[i].second, sizes[i]).ok());
    pack[host[i].first] = device.back().get();
  }
  s = g.execute_plan_at_index(handle, pack, nullptr, index);
  EXPECT_TRUE(s.ok()) << s.to_string();
  if (gpu) {
    EXPECT_TRUE(dg::memory::synchronize(hi).ok());
    EXPECT_TRUE(dg::memory::copy_to_host(hi, out.o.bytes.data(), pack[O], out.o.bytes.size()).ok());
    if (c.stats) {
      EXPECT_TRUE(dg::memory::copy_to_host(hi, out.stats.bytes.data(), pack[STATS], out.stats.bytes.size()).ok());
    }
  }
  return out;
}

double tolerance(T t) { return t == T::HALF ? 3e-3 : t == T::FLOAT ? 3e-3 : 1e-2; }

// ||got - want|| / ||want|| within tol, every element within 8 tol (1 + |want|), no NaN.
void expect_close(const Case& c, const HostTensor& got, const HostTensor& want, double tol, const std::string& what) {
  sdpa_test::expect_close(c, got, want, tol, what, 8.0, true);
}

// ---- no GPU needed

class CudaSdpaCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  }
  static void compile(const sd::Config& c, const std::string& arch) {
    std::vector<uint8_t> cubin;
    const std::string src = sd::kernel_source(c);
    ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_sdpa.cu", arch.c_str(), &cubin)) << c.describe();
    EXPECT_GT(cubin.size(), 1000u);
  }
};

TEST_F(CudaSdpaCompile, WgmmaKernelsCompileForHopper) {
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, 128, true, false), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::HALF, T::FLOAT, 256, false, true), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, 64, false, false, 2), "sm_90a");  // 2 blocks an SM
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, 128, true, false, 1, true), "sm_90a");  // ping-pong
  compile(sd::config_for(sd::Core::WGMMA, T::HALF, T::HALF, 64, false, true, 2, false, true), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, 128, true, false, 1, true, true), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::FLOAT, 64, false, false, 2, false, true), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, 128, true, false, 1, false, true, 3), "sm_90a");
  compile(sd::config_for(sd::Core::WGMMA, T::HALF, T::HALF, 64, true, false, 1, true, true, 3), "sm_90a");
}

TEST_F(CudaSdpaCompile, MmaSyncKernelsCompileForAmpere) {
  compile(sd::config_for(sd::Core::MMA_SYNC, T::BFLOAT16, T::BFLOAT16, 64, false, false), "sm_80");
  compile(sd::config_for(sd::Core::MMA_SYNC, T::HALF, T::HALF, 192, false, true), "sm_86");
}

// A graph lowered for the CPU handle: the partition the engine would see.
struct Lowered {
  dg::Graph g;
  dg::Handle cpu{dg::Device::cpu()};
  dg::Partition part;
};

void lower(const Case& c, Lowered& l, std::vector<int64_t> q_strides = {}) {
  l.g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT);
  HostTensor q({c.b, c.h, c.sq, c.d}, c.type, c.bshd), k({c.b, c.hk, c.skv, c.d}, c.type, c.bshd),
      v({c.b, c.hk, c.skv, c.dv}, c.type, c.bshd);
  if (!q_strides.empty()) q.strides = q_strides;
  auto [O, S] = l.g.sdpa(q.declare(l.g, "Q"), k.declare(l.g, "K"), v.declare(l.g, "V"), sdpa_test::attr_of(c));
  O->set_output(true);
  ASSERT_TRUE(l.g.validate().ok());
  ASSERT_TRUE(l.g.build_operation_graph(l.cpu).ok());
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(dg::partition_graph(*impl_of(l.g).ir, parts).ok());
  ASSERT_EQ(parts.size(), 1u);
  l.part = parts[0];
}

std::string describe_reason(const Case& c, std::vector<int64_t> q_strides = {}) {
  Lowered l;
  lower(c, l, std::move(q_strides));
  sd::Problem pr;
  std::string why;
  return sd::describe(l.part, pr, why) ? "accepted" : why;
}

TEST(CudaSdpaEngine, RejectsWithReasons) {
  Case c;
  c.type = T::FLOAT;
  EXPECT_EQ(describe_reason(c),
            "node 'attn', tensor 'Q': data type FLOAT is not supported (HALF or BFLOAT16: the tensor cores take 16-bit "
            "operands)");
  c = Case{};
  c.dv = 32;
  EXPECT_EQ(describe_reason(c), "node 'attn', tensor 'V': head dim 32 differs from Q's 64 (the kernels need equal head "
                                "dims for Q, K and V)");
  c = Case{};
  c.d = c.dv = 320;
  EXPECT_EQ(describe_reason(c), "node 'attn', tensor 'V': head dim 320 exceeds 256 (a row of O is held in registers)");
  c.d = c.dv = 12;
  EXPECT_EQ(describe_reason(c), "node 'attn', tensor 'V': head dim 12 is not a multiple of 8 (rows move in 16-byte chunks)");
  c = Case{};
  c.sq = 4;
  EXPECT_EQ(describe_reason(c, {4 * 64 * 2, 4 * 64 * 2, 1, 4}),
            "node 'attn', tensor 'Q': the head dim is not contiguous (its stride is 4, the kernels need 1)");
  EXPECT_EQ(describe_reason(c, {1000, 1000, 68, 1}),
            "node 'attn', tensor 'Q': stride 68 of dim 2 is not a positive multiple of 8 elements (rows move in 16-byte "
            "chunks)");
  EXPECT_EQ(describe_reason(Case{}), "accepted");
  // Not a CUDA handle, an old GPU, wgmma off Hopper.
  Lowered l;
  lower(Case{}, l);
  dg::Target cpu_target;
  cpu_target.handle = &impl_of(l.cpu);
  const dg::Support s = dg::cuda::sdpa_flash_engine().check(l.part, cpu_target);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason, "runs on CUDA handles; this one is cpu");
  sd::Problem pr;
  std::string why;
  ASSERT_TRUE(sd::describe(l.part, pr, why)) << why;
  sd::Config cfg;
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 1}, 80, cfg, why));
  EXPECT_EQ(why, "knob core=1 (wgmma + TMA) needs sm_90a; the device is sm_80");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 0, .blocks_per_sm = 2}, 90, cfg, why));
  EXPECT_EQ(why, "knob blocks_per_sm=2 goes with core=1 (wgmma) and head dims up to 64; here core=0, head dim 64");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 1, .overlap = 1, .blocks_per_sm = 2}, 90, cfg, why));
  EXPECT_EQ(why, "knob blocks_per_sm=2 goes with overlap=0: the overlap's second S tile does not fit the 104 registers "
                 "a consumer has when two blocks share an SM (ptxas serializes the wgmma)");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 1, .overlap = 0, .pingpong = 1}, 90, cfg, why));
  EXPECT_EQ(why, "knob pingpong=1 goes with core=1 (wgmma) and overlap=1 (turns are taken in the overlapped loop); "
                 "here core=1, overlap=0");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 0, .pingpong = 1}, 90, cfg, why));
  EXPECT_EQ(why, "knob pingpong=1 goes with core=1 (wgmma) and overlap=1 (turns are taken in the overlapped loop); "
                 "here core=0, overlap=1");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 0, .persistent = 1}, 90, cfg, why));
  EXPECT_EQ(why, "knob persistent=1 goes with core=1 (wgmma); here core=0");
  EXPECT_FALSE(sd::make_config(pr, sd::SdpaKnobs{.core = 0, .stages = 3}, 90, cfg, why));
  EXPECT_EQ(why, "knob stages=3 goes with core=1 (wgmma; mma.sync double-buffers); here core=0");
  // Three stages fit a block at head dim 128 (32 KB of Q, three 64 KB K/V stages), not at 256
  // (64 KB of Q, three 64 KB stages of 64-key tiles).
  sd::Problem wide = pr;
  wide.d = 128;
  EXPECT_TRUE(sd::make_config(wide, sd::SdpaKnobs{.core = 1, .persistent = 1, .stages = 3}, 90, cfg, why)) << why;
  EXPECT_EQ(cfg.stages, 3);
  wide.d = 256;
  EXPECT_FALSE(sd::make_config(wide, sd::SdpaKnobs{.core = 1, .stages = 3}, 90, cfg, why));
  EXPECT_EQ(why, "head dim 256 needs 263280 bytes of shared memory, more than sm_90 gives a block");
}

TEST(CudaSdpaEngine, ConfigurationsFitTheirDevices) {
  for (int d : {8, 64, 80, 128, 192, 256}) {
    const auto w = sd::config_for(sd::Core::WGMMA, T::BFLOAT16, T::BFLOAT16, d, true, false);
    const auto m = sd::config_for(sd::Core::MMA_SYNC, T::BFLOAT16, T::BFLOAT16, d, false, false);
    EXPECT_EQ(w.d_pad % 64, 0);
    EXPECT_GE(w.d_pad, d);
    EXPECT_LE(w.smem_bytes, 227 * 1024) << w.describe();
    EXPECT_LE(m.smem_bytes, 99 * 1024) << m.describe();  // fits sm_86/sm_89 too
  }
  // Knobs by device: wgmma first on Hopper (persistent blocks, then the same with ping-pong turns,
  // as measured), mma.sync only elsewhere.
  Case c128;
  c128.d = c128.dv = 128;
  Lowered l, l128;
  lower(Case{}, l);
  lower(c128, l128);
  const dg::cuda::testing::RulesTarget hopper(90), ampere(80);
  const dg::Target &th = hopper.target, &ta = ampere.target;
  // Head dim 64 also offers two blocks an SM (64-key tiles, persistent); 128 does not. Three-stage
  // rings come just behind their two-stage twins (within 2% on H100s, 2026-12-06).
  const auto kh = dg::cuda::sdpa_flash_engine().knob_space(l.part, th);
  ASSERT_EQ(kh.size(), 8u);
  EXPECT_EQ(dg::knobs_to_string(kh[0]), "core=1,overlap=1,persistent=1");
  EXPECT_EQ(dg::knobs_to_string(kh[1]), "core=1,overlap=1,persistent=1,stages=3");
  EXPECT_EQ(dg::knobs_to_string(kh[2]), "core=1,overlap=1,persistent=1,pingpong=1");
  EXPECT_EQ(dg::knobs_to_string(kh[7]), "core=0");
  const auto kh128 = dg::cuda::sdpa_flash_engine().knob_space(l128.part, th);
  ASSERT_EQ(kh128.size(), 7u);
  EXPECT_EQ(dg::knobs_to_string(kh128[0]), "core=1,overlap=1,persistent=1");
  EXPECT_EQ(dg::knobs_to_string(kh128[1]), "core=1,overlap=1,persistent=1,stages=3");
  const auto ka = dg::cuda::sdpa_flash_engine().knob_space(l.part, ta);
  ASSERT_EQ(ka.size(), 1u);
  EXPECT_EQ(dg::knobs_to_string(ka[0]), "core=0");
}

// ---- GPU: every plan against ref

class CudaSdpa : public ::testing::Test {
 protected:
  void SetUp() override {
    gpu_ = dg::cuda::testing::cuda_handle(why_);
    DG_SKIP_WITHOUT_GPU(gpu_, why_);
  }

  // Every plan cuda_sdpa_flash offers for the case, each against ref.
  void check(const Case& c, uint32_t seed) {
    const Inputs in = make_inputs(c, seed);
    const Outputs want = run(c, in, cpu_, "ref", "");
    const Outputs first = run(c, in, *gpu_, "cuda_sdpa_flash", "");
    ASSERT_FALSE(first.plans.empty()) << c.describe();
    for (const std::string& plan : first.plans) {
      const Outputs got = run(c, in, *gpu_, "cuda_sdpa_flash", plan);
      expect_close(c, got.o, want.o, tolerance(got.o.type), "O of " + plan);
      if (c.stats) expect_close(c, got.stats, want.stats, 1e-5, "STATS of " + plan);
    }
  }

  std::string why_;
  std::unique_ptr<dg::Handle> gpu_;
  dg::Handle cpu_{dg::Device::cpu()};
};

TEST_F(CudaSdpa, MatchesRefOnRandomShapes) {
  auto vary = [](test_random::IntPicker& pick, int trial, Case& c) {
    c.d = c.dv = trial % 4 == 3 ? 128 : 64;
    c.type = trial % 2 ? T::HALF : T::BFLOAT16;
    c.bshd = trial % 3 == 1;
    sdpa_test::pick_mask_and_bounds(pick, c, trial, 150, 60);
    c.padding = trial % 4 == 2;
    c.stats = trial % 3 != 2;
  };
  sdpa_test::for_each_random_case<Case>(2026, 20, 300, 300, vary, [this](const Case& c, int trial) {
    check(c, static_cast<uint32_t>(trial + 1));
  });
}

TEST_F(CudaSdpa, TileEdgesAndLongSequences) {
  // Query blocks of 64 (mma.sync) and 128 (wgmma), key tiles of 64 and 128: lengths around them.
  Case base;
  base.h = 2;
  base.left = 150;
  base.stats = true;
  uint32_t seed = 100;
  for (const Case& c :
       sdpa_test::tile_edge_cases(base, {{128, 128}, {129, 127}, {63, 257}, {640, 700}, {1, 385}, {300, 17}}))
    check(c, ++seed);
}

// More query blocks than the grid's slots, so persistent plans run several rounds of pairs, with
// an odd number of query blocks a head (a pair then spans two heads). Outputs NaN-poisoned first.
TEST_F(CudaSdpa, PersistentRoundsOfPairs) {
  Case c;
  c.b = 3, c.h = 48, c.hk = 16;  // GQA: 3 query heads a K/V head
  c.sq = c.skv = 300;            // 3 query blocks of 128 a head: 432 blocks
  c.mask = Mask::CAUSAL;
  c.stats = true;
  check(c, 77);
  c.sq = 520, c.skv = 700, c.mask = Mask::NONE;  // 5 query blocks a head, 720 blocks
  c.b = 1;
  check(c, 78);
}

TEST_F(CudaSdpa, HeadDimsUpTo256) {
  uint32_t seed = 200;
  for (int64_t d : {8, 40, 96, 192, 256}) {
    Case c;
    c.h = 2;
    c.hk = 1;
    c.sq = 150;
    c.skv = 133;
    c.d = c.dv = d;
    c.mask = d % 3 ? Mask::CAUSAL : Mask::NONE;
    c.stats = true;
    check(c, ++seed);
  }
}

TEST_F(CudaSdpa, FloatOutputNegativeAndZeroScale) {
  Case c;
  c.h = 3;
  c.sq = 77;
  c.skv = 190;
  c.out = T::FLOAT;
  c.mask = Mask::CAUSAL_BOTTOM_RIGHT;
  c.stats = true;
  check(c, 301);
  c.out = T::NOT_SET;
  c.type = T::HALF;
  c.scale = -0.2;
  check(c, 302);
  c.scale = 0.0;
  c.mask = Mask::SLIDING_WINDOW;
  c.left = 30;
  check(c, 303);
}

TEST_F(CudaSdpa, FullyMaskedAndPaddedRowsAreZeroNotNaN) {
  Case c;
  const Inputs in = sdpa_test::fully_masked_inputs(c, 170);  // the first 140 rows see no key
  const Outputs want = run(c, in, cpu_, "ref", "");
  const Outputs first = run(c, in, *gpu_, "cuda_sdpa_flash", "");
  for (const std::string& plan : first.plans) {
    const Outputs got = run(c, in, *gpu_, "cuda_sdpa_flash", plan);
    expect_close(c, got.o, want.o, tolerance(c.type), "O of " + plan);
    expect_close(c, got.stats, want.stats, 1e-5, "STATS of " + plan);
    sdpa_test::expect_masked_rows_zero(c, got.o, got.stats, plan);
  }
}

TEST_F(CudaSdpa, ChosenFirstAndSerializedPlanRuns) {
  Case c;
  c.b = 2, c.h = 4, c.hk = 2, c.sq = 200, c.skv = 200, c.mask = Mask::CAUSAL, c.stats = true;
  const Inputs in = make_inputs(c, 11);
  // Our own flash engine, first among its plans (mode A may rank cuDNN's SDPA above it).
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(T::FLOAT).set_kernel_cache(shared_cache());
  g.select_engines({"cuda_sdpa_flash"});
  auto [O, S] = g.sdpa(in.q.declare(g, "Q"), in.k.declare(g, "K"), in.v.declare(g, "V"), sdpa_test::attr_of(c));
  O->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*gpu_).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  std::string name;
  ASSERT_TRUE(g.get_plan_name_at_index(0, name).ok());
  EXPECT_EQ(name.rfind("cuda_sdpa_flash", 0), 0u) << g.explain();
  ASSERT_TRUE(g.build_plan_at_index(*gpu_, 0).ok());
  std::vector<uint8_t> blob;
  ASSERT_TRUE(g.serialize(blob).ok());
  dg::Graph g2;
  const auto s = g2.deserialize(*gpu_, blob);
  ASSERT_TRUE(s.ok()) << s.to_string();
  // The reloaded plan gives what a freshly built one gives, bit for bit.
  const Outputs fresh = run(c, in, *gpu_, "cuda_sdpa_flash", name);
  dg::HandleImpl& hi = impl_of(*gpu_);
  std::vector<dg::memory::Buffer> bufs;
  for (const auto* t : {&in.q, &in.k, &in.v}) {
    bufs.emplace_back(hi, t->bytes.size());
    ASSERT_TRUE(dg::memory::copy_to_device(hi, bufs.back().get(), t->bytes.data(), t->bytes.size()).ok());
  }
  bufs.emplace_back(hi, fresh.o.bytes.size());
  const auto& ir = *impl_of(g2).ir;
  dg::UidVariantPack pack;
  for (const auto& t : ir.tensors) {
    if (t.name == "Q") pack[t.uid] = bufs[0].get();
    if (t.name == "K") pack[t.uid] = bufs[1].get();
    if (t.name == "V") pack[t.uid] = bufs[2].get();
    if (!t.is_virtual && t.producer >= 0 && t.dims[3] == c.d) pack[t.uid] = bufs[3].get();
  }
  ASSERT_TRUE(g2.execute(*gpu_, pack, nullptr).ok());
  std::vector<unsigned char> o(fresh.o.bytes.size());
  ASSERT_TRUE(dg::memory::copy_to_host(hi, o.data(), bufs[3].get(), o.size()).ok());
  EXPECT_EQ(o, fresh.o.bytes);
}

}  // namespace
