// cpu_gemm_packed against ref: the microkernels and the blocked driver directly, then matmul
// graphs of random shapes, strides, types and fusion chains through the public pipeline, every
// plan (one per ISA the CPU has) checked to be cpu_gemm_packed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <random>

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "engines/cpu/gemm/pack_bf16.hpp"
#include "cpu_test_util.hpp"
#include "cpu_gemm_test_util.hpp"
#include "ref_test_util.hpp"

namespace {

namespace dg = dnngraph;
namespace cg = dnngraph::cpu::gemm;
using ref_test::Dims;
using ref_test::HostTensor;

using cpu_gemm_test::matches_naive;
using cpu_gemm_test::PlainProblem;

// Every tile shape of an ISA, and its one-row kernels (row_kernel_set: a matrix-vector product).
std::vector<const cg::KernelSet*> tile_kernels(dg::cpu::Isa isa) {
  std::vector<const cg::KernelSet*> out = cg::kernel_shapes(isa);
  out.push_back(&cg::row_kernel_set(isa));
  return out;
}

TEST(CpuGemmKernels, DriverMatchesNaiveOnEveryIsa) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  dg::ThreadPool pool(2);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
   for (const cg::KernelSet* shape : tile_kernels(isa)) {
    const cg::KernelSet& ks = *shape;
    SCOPED_TRACE(std::to_string(ks.mr) + "x" + std::to_string(ks.nr));
    for (int trial = 0; trial < 6; ++trial) {
      const int64_t m = 1 + rng() % 70, n = 1 + rng() % 70 + (trial < 3 ? 0 : 2 * ks.nr), k = 1 + rng() % 90;
      const bool bf16 = trial % 2;
      std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      std::vector<uint16_t> a16(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        a16[i] = dg::dtype::float_to_bf16(u(rng));
        a[i] = bf16 ? dg::dtype::bf16_to_float(a16[i]) : u(rng);
      }
      for (auto& v : b) v = u(rng);
      std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
      PlainProblem p(m, n, k);
      p.a = {bf16 ? static_cast<const void*>(a16.data()) : a.data(), bf16 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT,
             k, 1};
      p.bm = {b.data(), dg::DataType::FLOAT, n, 1};
      p.c = &c;
      // Small blocks so that several K blocks, M blocks and N tasks occur, N tasks of 2 and 4 panels.
      cg::Blocking blk{2 * ks.mr, 16, (trial < 3 ? 2 : 4) * ks.nr};
      ASSERT_TRUE(cg::run(p, ks, blk, pool, nullptr).ok());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t q = 0; q < k; ++q) want += double(a[static_cast<size_t>(i * k + q)]) * b[static_cast<size_t>(q * n + j)];
          ASSERT_NEAR(c[static_cast<size_t>(i * n + j)], want, 1e-5 * (1 + std::fabs(want)) * std::sqrt(double(k)))
              << dg::cpu::isa_name(isa) << " m=" << m << " n=" << n << " k=" << k << " at " << i << "," << j;
        }
    }
   }
  });
}

// C written in place, and (chained) an epilogue chain the driver applies to each tile in the
// kernel's registers (TileChain): + bias[n], residual - v, * scalar, ReLU, clip to [-0.5, 1.5].
class ChainedProblem final : public cg::GemmProblem {
 public:
  const float* a = nullptr;  // row-major M x K
  cg::StridedMatrix bm;
  float* c = nullptr;  // row-major M x N
  const float *bias = nullptr, *residual = nullptr;
  bool chained = false;
  ChainedProblem(int64_t m, int64_t n, int64_t k) {
    M = m;
    N = n;
    K = k;
  }
  void a_rows(int64_t, int64_t m0, int64_t mc, const cg::KBlock& kb, int mr, const float** rows, float*) const override {
    const int64_t tiles = (mc + mr - 1) / mr;
    for (int64_t i = 0; i < tiles * mr; ++i) rows[i] = a + (m0 + std::min(i, mc - 1)) * K + kb.k0;
  }
  void pack_b(int64_t, int64_t n0, int64_t nc, int nr, float* dst) const override {
    cg::pack_panels(bm, K, n0, nc, nr, dst);
  }
  float* c_direct(int64_t, int64_t m0, int64_t n0, int64_t& ldc) const override {
    ldc = N;
    return c + m0 * N + n0;
  }
  bool chains_tiles() const override { return chained; }
  void tile_chain(int64_t, int64_t m0, int64_t n0, dg::cpu::TileChain& tc) const override { tc = chain_at(m0, n0); }
  dg::cpu::TileChain chain_at(int64_t m0, int64_t n0) const {
    dg::cpu::TileChain tc;
    tc.chain = &chain;
    tc.ld = N;
    tc.column[0] = bias + n0;
    tc.same[1] = residual + m0 * N + n0;
    tc.scalar[2] = 1.25f;
    return tc;
  }
  dg::cpu::Chain chain = [] {
    using K = dg::cpu::ChainStep;
    dg::cpu::Chain c;
    c.operand_instr = {0, 1, 2};  // only counted here: a column, a same-as-output and a scalar operand
    c.steps = {{K::ADD, 0}, {K::SUB_FROM, 1}, {K::MUL, 2}, {K::RELU, -1}, {K::RELU, -1, -0.5f, 1.5f}};
    return c;
  }();
};

// The chain in the kernels' registers (full tiles) and after the copy (edge tiles) gives the same
// bits as the GEMM followed by the chain over all of C (run_chain_block, itself checked against
// the row loop in test_cpu_epilogue), on every ISA and tile shape, with several K blocks (the last
// one chains) and NaN rows.
TEST(CpuGemmKernels, TileChainsMatchTheChainAfterTheGemm) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-1, 1);
  dg::ThreadPool pool(2);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    for (const cg::KernelSet* shape : tile_kernels(isa)) {
      const cg::KernelSet& ks = *shape;
      if (!ks.kernel_chain) continue;
      SCOPED_TRACE(std::string(dg::cpu::isa_name(isa)) + " " + std::to_string(ks.mr) + "x" + std::to_string(ks.nr));
      for (int trial = 0; trial < 4; ++trial) {
        const int64_t m = 1 + rng() % 60, n = 1 + rng() % 60 + (trial % 2) * 2 * ks.nr, k = 1 + rng() % 70;
        std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), bias(static_cast<size_t>(n)),
            residual(static_cast<size_t>(m * n));
        for (auto* v : {&a, &b, &bias, &residual})
          for (auto& x : *v) x = u(rng);
        a[static_cast<size_t>((m / 2) * k)] = std::nanf("");  // row m / 2 is NaN: ReLU keeps it
        std::vector<float> want(static_cast<size_t>(m * n)), got(want.size(), 7.0f);
        ChainedProblem p(m, n, k);
        p.a = a.data();
        p.bm = {b.data(), dg::DataType::FLOAT, n, 1};
        p.bias = bias.data();
        p.residual = residual.data();
        const cg::Blocking blk{2 * ks.mr, 16, 2 * ks.nr};  // several K blocks, M blocks and N tasks
        p.c = want.data();
        ASSERT_TRUE(cg::run(p, ks, blk, pool, nullptr).ok());
        p.chain_at(0, 0).apply(m, n, want.data(), 0, 0);
        p.c = got.data();
        p.chained = true;
        ASSERT_TRUE(cg::run(p, ks, blk, pool, nullptr).ok());
        for (size_t i = 0; i < want.size(); ++i) {
          if (std::isnan(want[i]) && std::isnan(got[i])) continue;
          ASSERT_EQ(got[i], want[i]) << "m=" << m << " n=" << n << " k=" << k << " at " << i;
        }
      }
    }
  });
}

// Rows read one line each per K step crowd an L1 set when more than half its ways hold them: on
// a 32 KiB 8-way L1 (sets repeat every 4 KiB) 14 rows 4 KiB apart or 2 KiB apart (7 a set) do,
// 1 KiB apart (4 a set) and 7 rows 2 KiB apart do not; a 48 KiB 12-way L1 takes 7 rows 2 KiB apart.
TEST(CpuFeatures, RowsCrowdL1ByTheWaysTheyShare) {
  dnngraph::cpu::CpuFeatures zen4;
  zen4.l1d_bytes = 32 << 10;
  zen4.l1d_ways = 8;
  EXPECT_TRUE(zen4.rows_crowd_l1(4096, 14));
  EXPECT_TRUE(zen4.rows_crowd_l1(-4096, 14));
  EXPECT_TRUE(zen4.rows_crowd_l1(2048, 14));
  EXPECT_FALSE(zen4.rows_crowd_l1(1024, 14));
  EXPECT_FALSE(zen4.rows_crowd_l1(4160, 14));
  EXPECT_FALSE(zen4.rows_crowd_l1(0, 14));
  dnngraph::cpu::CpuFeatures golden_cove = zen4;
  golden_cove.l1d_bytes = 48 << 10;
  golden_cove.l1d_ways = 12;
  EXPECT_TRUE(golden_cove.rows_crowd_l1(4096, 14));
  EXPECT_FALSE(golden_cove.rows_crowd_l1(2048, 7));
  EXPECT_TRUE(zen4.rows_crowd_l1(2048, 12));
}

// Caches come from sysfs where it has them (glibc's sysconf said 320 MiB of L3 on a 32 MiB EPYC
// guest): sizes with their K / M suffixes, L1's ways, instruction caches skipped; an empty folder
// leaves every field as it was.
TEST(CpuFeatures, CachesReadFromSysfs) {
  const std::string dir = ::testing::TempDir() + "dg_sysfs_caches";
  auto write = [&](int index, const char* level, const char* type, const char* size, const char* ways) {
    const std::string d = dir + "/index" + std::to_string(index);
    std::filesystem::create_directories(d);
    std::ofstream(d + "/level") << level << "\n";
    std::ofstream(d + "/type") << type << "\n";
    std::ofstream(d + "/size") << size << "\n";
    std::ofstream(d + "/ways_of_associativity") << ways << "\n";
  };
  std::filesystem::remove_all(dir);
  write(0, "1", "Data", "48K", "12");
  write(1, "1", "Instruction", "32K", "8");
  write(2, "2", "Unified", "2048K", "16");
  write(3, "3", "Unified", "32M", "16");
  dnngraph::cpu::CpuFeatures f;
  ASSERT_TRUE(dnngraph::cpu::read_sysfs_caches(dir, f));
  EXPECT_EQ(f.l1d_bytes, 48 << 10);
  EXPECT_EQ(f.l1d_ways, 12);
  EXPECT_EQ(f.l2_bytes, 2 << 20);
  EXPECT_EQ(f.l3_bytes, int64_t{32} << 20);
  dnngraph::cpu::CpuFeatures untouched;
  EXPECT_FALSE(dnngraph::cpu::read_sysfs_caches(dir + "/none", untouched));
  EXPECT_EQ(untouched.l3_bytes, dnngraph::cpu::CpuFeatures{}.l3_bytes);
  std::filesystem::remove_all(dir);
}

// DNNGRAPH_MAX_CPU_ISA's cap: "avx2" leaves AVX2 and clears AVX-512 with what needs it, "portable"
// clears every SIMD level, anything else changes nothing.
TEST(CpuFeatures, CappedClearsTheLevelsAboveTheCap) {
  dnngraph::cpu::CpuFeatures all;
  all.avx2 = all.fma = all.f16c = all.avx512f = all.avx512bf16 = all.amx_bf16 = true;
  using dnngraph::cpu::Isa;
  const auto avx2 = dnngraph::cpu::capped(all, "avx2");
  EXPECT_EQ(avx2.best(), Isa::AVX2);
  EXPECT_FALSE(avx2.avx512bf16 || avx2.amx_bf16);
  EXPECT_EQ(dnngraph::cpu::capped(all, "portable").best(), Isa::PORTABLE);
  EXPECT_EQ(dnngraph::cpu::capped(all, "avx512").best(), Isa::AVX512);
  EXPECT_EQ(dnngraph::cpu::capped(all, nullptr).best(), Isa::AVX512);
  EXPECT_EQ(dnngraph::cpu::capped(all, "AVX2").best(), Isa::AVX2);  // as ONEDNN_MAX_CPU_ISA spells it
  EXPECT_EQ(dnngraph::cpu::capped(all, "sse4").best(), Isa::AVX512);  // not a level of ours: no cap
}

TEST(CpuGemmKernels, ShapeFollowsThePadding) {
  for (dg::cpu::Isa isa : cpu_test::supported_isas()) {
    const auto shapes = cg::kernel_shapes(isa);
    ASSERT_FALSE(shapes.empty());
    EXPECT_EQ(shapes[0], &cg::kernel_set(isa));
    // Problems the first shape fills within 2% keep it where no as wide shape fills whole tiles.
    EXPECT_EQ(&cg::kernel_for_shape(isa, 3137, 64), shapes[0]);
    if (isa != dg::cpu::Isa::AVX512) {
      EXPECT_EQ(&cg::kernel_for_shape(isa, 3136, 64), shapes[0]);
      EXPECT_EQ(&cg::kernel_for_shape(isa, 784, 128), shapes[0]);
    }
  }
  if (!dg::cpu::cpu_features().supports(dg::cpu::Isa::AVX512) || !cg::avx512_kernels_7x48()) return;
  // ResNet-50's 56x56 x 64 and 28x28 x 128: 12-row tiles fill them within 2%, 14-row ones whole
  // (no edge tile: a residual add's output may then be stored over the residual).
  EXPECT_EQ(&cg::kernel_for_shape(dg::cpu::Isa::AVX512, 3136, 64), cg::avx512_kernels_14x32());
  EXPECT_EQ(&cg::kernel_for_shape(dg::cpu::Isa::AVX512, 784, 128), cg::avx512_kernels_14x32());
  // 7x7 x 512: 12 x 32 tiles pad 49 pixels to 60 (82% filled), 7 x 48 ones 512 channels to 528 (97%).
  EXPECT_EQ(&cg::kernel_for_shape(dg::cpu::Isa::AVX512, 49, 512), cg::avx512_kernels_7x48());
  EXPECT_EQ(cg::kernel_for_shape(dg::cpu::Isa::AVX512, 49, 512).mr, 7);
  // 14x14 x 256: 12-row tiles pad 196 pixels to 204 (96%), 14-row ones fill them.
  ASSERT_NE(cg::avx512_kernels_14x32(), nullptr);
  EXPECT_EQ(&cg::kernel_for_shape(dg::cpu::Isa::AVX512, 196, 256), cg::avx512_kernels_14x32());
  EXPECT_EQ(cg::kernel_for_shape(dg::cpu::Isa::AVX512, 196, 256).mr, 14);
  // 16 output channels: 32-wide panels are half padding, 16-wide ones full.
  ASSERT_NE(cg::avx512_kernels_16x16(), nullptr);
  EXPECT_EQ(&cg::kernel_for_shape(dg::cpu::Isa::AVX512, 12544, 16), cg::avx512_kernels_16x16());
  EXPECT_EQ(cg::kernel_for_shape(dg::cpu::Isa::AVX512, 12544, 16).nr, 16);
}

TEST(CpuGemmKernels, PackPanelsZeroPadsAndConverts) {
  std::vector<uint16_t> src(3 * 5);  // 3 x 5 fp16, row-major
  for (size_t i = 0; i < src.size(); ++i) src[i] = dg::dtype::float_to_half(0.25f * static_cast<float>(i) - 1.0f);
  std::vector<float> dst(2 * 3 * 4, std::nanf(""));
  cg::pack_panels({src.data(), dg::DataType::HALF, 5, 1}, 3, 1, 4, 4, dst.data());
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(dst[static_cast<size_t>(k * 4 + j)], 0.25f * static_cast<float>(k * 5 + 1 + j) - 1.0f);
  std::vector<float> dst2(3 * 4, std::nanf(""));
  cg::pack_panels({src.data(), dg::DataType::HALF, 5, 1}, 3, 3, 2, 4, dst2.data());
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(dst2[static_cast<size_t>(k * 4 + 1)], 0.25f * static_cast<float>(k * 5 + 4) - 1.0f);
    EXPECT_EQ(dst2[static_cast<size_t>(k * 4 + 2)], 0.0f);
    EXPECT_EQ(dst2[static_cast<size_t>(k * 4 + 3)], 0.0f);
  }
}

// fp32 with unit stride along k and strided columns (KRSC weights): the AVX2 path transposes 8 x 8
// blocks; sizes that are no multiple of 8 exercise its scalar edges and the zero padding.
TEST(CpuGemmKernels, PackPanelsTransposedFp32MatchesScalar) {
  std::mt19937 rng(11);
  for (int rep = 0; rep < 6; ++rep) {
    const int64_t krows = 1 + static_cast<int64_t>(rng() % 40), c0 = static_cast<int64_t>(rng() % 5);
    const int64_t cols = 1 + static_cast<int64_t>(rng() % 37), cs = krows + static_cast<int64_t>(rng() % 3);
    const int nr = rep % 2 ? 16 : 8;
    std::vector<float> src(static_cast<size_t>((c0 + cols) * cs));
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 3.0f;
    const int64_t panels = (cols + nr - 1) / nr;
    std::vector<float> dst(static_cast<size_t>(panels * krows * nr), std::nanf(""));
    cg::pack_panels({src.data(), dg::DataType::FLOAT, 1, cs}, krows, c0, cols, nr, dst.data());
    for (int64_t p = 0; p < panels; ++p)
      for (int64_t k = 0; k < krows; ++k)
        for (int64_t j = 0; j < nr; ++j) {
          const int64_t col = p * nr + j;
          const float want = col < cols ? src[static_cast<size_t>((c0 + col) * cs + k)] : 0.0f;
          ASSERT_EQ(dst[static_cast<size_t>((p * krows + k) * nr + j)], want) << "krows " << krows << " cols " << cols;
        }
  }
}

// ---- graph level

using ref_test::Build;
using cpu_test::check_engine_vs_ref;

HostTensor output_like(const Dims& dims, dg::DataType t) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return ref_test::make_tensor(dims, strides, t);
}

TEST(CpuGemmPacked, RandomShapesStridesAndTypesMatchRef) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 10; ++trial) {
    const size_t rank = 2 + rng() % 3;
    const int64_t m = 1 + rng() % 45, n = 1 + rng() % 45, k = 1 + rng() % 60;
    Dims ad(rank), bd(rank), cd(rank);
    for (size_t i = 0; i + 2 < rank; ++i) {
      const int64_t b = 1 + rng() % 3;
      ad[i] = rng() % 3 == 0 ? 1 : b;  // broadcast batch dims
      bd[i] = rng() % 3 == 0 ? 1 : b;
      cd[i] = std::max(ad[i], bd[i]);
      if (ad[i] != cd[i] && ad[i] != 1) ad[i] = cd[i];
    }
    ad[rank - 2] = m; ad[rank - 1] = k;
    bd[rank - 2] = k; bd[rank - 1] = n;
    cd[rank - 2] = m; cd[rank - 1] = n;
    const dg::DataType t = ref_test::random_float_type(rng);
    auto a = ref_test::random_tensor(ad, t, rng, -1, 1);
    auto b = ref_test::random_tensor(bd, t, rng, -1, 1);
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(dg::to_string(t)));
    check_engine_vs_ref("cpu_gemm_packed", {a, b}, {output_like(cd, dg::DataType::FLOAT)},
                        [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                          return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                        }, 1e-5, std::sqrt(double(k)));
  }
}

// One row of A (a classifier's matrix-vector product, which runs on the one-row kernels), constant
// weights packed once, + bias, over several K blocks and N tasks.
TEST(CpuGemmPacked, OneRowMatchesRef) {
  std::mt19937 rng(13);
  auto a = ref_test::random_tensor({1, 700}, dg::DataType::FLOAT, rng, -1, 1);
  auto b = ref_test::random_tensor({700, 1000}, dg::DataType::FLOAT, rng, -1, 1);
  auto bias = ref_test::random_tensor({1, 1000}, dg::DataType::FLOAT, rng, -1, 1);
  check_engine_vs_ref("cpu_gemm_packed", {a, b, bias}, {output_like({1, 1000}, dg::DataType::FLOAT)},
                      [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                        return std::vector<dg::TensorPtr>{g.bias(g.matmul(in[0], in[1], dg::MatmulAttr()), in[2])};
                      }, 1e-5, 30.0);
}

TEST(CpuGemmPacked, LargerThanOneBlockMatchesRef) {
  std::mt19937 rng(12);
  // Over the default blocking in every direction, with edges that fit no tile.
  auto a = ref_test::random_tensor({131, 517}, dg::DataType::FLOAT, rng, -1, 1);
  auto b = ref_test::random_tensor({517, 83}, dg::DataType::FLOAT, rng, -1, 1);
  check_engine_vs_ref("cpu_gemm_packed", {a, b}, {output_like({131, 83}, dg::DataType::FLOAT)},
                      [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                        return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                      }, 1e-5, 20.0);
}

// matmul -> * alpha -> + bias -> activation (-> + residual), optional AMAX and bf16 output.
void fused_case(uint32_t seed, dg::PointwiseMode act, bool residual, bool amax, dg::DataType out_type) {
  std::mt19937 rng(seed);
  const int64_t bt = 2, m = 1 + rng() % 40, n = 1 + rng() % 40, k = 1 + rng() % 50;
  std::vector<HostTensor> in{ref_test::random_tensor({bt, m, k}, dg::DataType::FLOAT, rng, -1, 1),
                             ref_test::random_tensor({1, k, n}, dg::DataType::FLOAT, rng, -1, 1),
                             ref_test::random_tensor({1, 1, n}, dg::DataType::FLOAT, rng, -1, 1)};
  if (residual) in.push_back(ref_test::random_tensor({bt, m, n}, dg::DataType::BFLOAT16, rng, -1, 1));
  std::vector<HostTensor> outs{output_like({bt, m, n}, out_type)};
  if (amax) outs.push_back(output_like({1, 1, 1}, dg::DataType::FLOAT));
  SCOPED_TRACE("seed " + std::to_string(seed) + " act " + std::string(dg::to_string(act)));
  check_engine_vs_ref("cpu_gemm_packed", in, outs,
                      [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                        auto y = g.matmul(t[0], t[1], dg::MatmulAttr());
                        auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({1, 1, 1}).set_stride({1, 1, 1}).set_data_type(dg::DataType::FLOAT));
                        alpha->set_is_pass_by_value(true).set_value(0.75);
                        y = g.scale(y, alpha);
                        y = g.bias(y, t[2]);
                        y = g.pointwise(y, dg::PointwiseAttr().set_mode(act));
                        if (residual) y = g.add(y, t[3]);
                        std::vector<dg::TensorPtr> r{y};
                        if (amax) r.push_back(g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX)));
                        return r;
                      }, 1e-5, std::sqrt(double(k)));
}

TEST(CpuGemmPacked, FusedEpiloguesMatchRef) {
  fused_case(21, dg::PointwiseMode::RELU_FWD, false, false, dg::DataType::FLOAT);
  fused_case(22, dg::PointwiseMode::GELU_FWD, true, false, dg::DataType::FLOAT);
  fused_case(23, dg::PointwiseMode::GELU_APPROX_TANH_FWD, false, true, dg::DataType::FLOAT);
  fused_case(24, dg::PointwiseMode::SIGMOID_FWD, true, true, dg::DataType::BFLOAT16);
  fused_case(25, dg::PointwiseMode::ELU_FWD, false, false, dg::DataType::HALF);  // a double-formula mode
}

// bf16 matmuls of 150-650 rows (past one 192-row AMX block, up to three), any n, k a multiple of
// 32 or not, batched or not, on 1-3 threads: the row ranges, column shares and K blocks that the
// small cases above never reach.
TEST(CpuGemmPacked, RandomBf16RowBlocksMatchRef) {
  std::mt19937 rng(27);
  int ran = 0;
  for (int trial = 0; trial < 9; ++trial) {
    const int64_t batch = trial % 3 == 2 ? 2 : 1, m = 150 + rng() % 500, n = 1 + rng() % 500;
    const int64_t k = trial % 2 == 0 ? 32 * (1 + rng() % 8) : 1 + rng() % 250;
    if (m * n * k * batch > 60'000'000) continue;
    ++ran;
    const int threads = 1 + static_cast<int>(rng() % 3);
    auto a = ref_test::random_tensor({batch, m, k}, dg::DataType::BFLOAT16, rng, -1, 1);
    auto b = ref_test::random_tensor({1, k, n}, dg::DataType::BFLOAT16, rng, -1, 1);
    SCOPED_TRACE("trial " + std::to_string(trial) + " batch=" + std::to_string(batch) + " m=" + std::to_string(m) +
                 " n=" + std::to_string(n) + " k=" + std::to_string(k) + " threads=" + std::to_string(threads));
    check_engine_vs_ref("cpu_gemm_packed", {a, b}, {output_like({batch, m, n}, dg::DataType::FLOAT)},
                        [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                          return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                        }, 1e-5, std::sqrt(double(k)), threads);
  }
  EXPECT_GE(ran, 6) << "most trials fit the size bound";
}

// bf16 matmuls (AMX where the CPU has it, k a multiple of 32) -> + bf16 bias -> ReLU (-> + fp16
// residual) into a bf16 or fp16 output, fp32 between the ops: the chain converts its operands and
// store and takes each block of C rows in one call (EpilogueRun::chain_rows_into).
TEST(CpuGemmPacked, HalfWidthChainTakesBlocksOfRows) {
  std::mt19937 rng(26);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t bt = 1 + trial % 2, m = 5 + rng() % 60, n = 3 + rng() % 70, k = 32 * (1 + rng() % 3);
    const bool residual = trial % 2 == 0;
    std::vector<HostTensor> in{ref_test::random_tensor({bt, m, k}, dg::DataType::BFLOAT16, rng, -1, 1),
                               ref_test::random_tensor({1, k, n}, dg::DataType::BFLOAT16, rng, -1, 1),
                               ref_test::random_tensor({1, 1, n}, dg::DataType::BFLOAT16, rng, -1, 1)};
    if (residual) in.push_back(ref_test::random_tensor({bt, m, n}, dg::DataType::HALF, rng, -1, 1));
    const dg::DataType out = trial < 2 ? dg::DataType::BFLOAT16 : dg::DataType::HALF;
    SCOPED_TRACE("trial " + std::to_string(trial) + " m=" + std::to_string(m) + " n=" + std::to_string(n));
    check_engine_vs_ref("cpu_gemm_packed", in, {output_like({bt, m, n}, out)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                          auto y = g.matmul(t[0], t[1], dg::MatmulAttr());
                          y->set_data_type(dg::DataType::FLOAT);
                          y = g.bias(y, t[2]);
                          y->set_data_type(dg::DataType::FLOAT);
                          y = g.relu(y);
                          if (residual) {
                            y->set_data_type(dg::DataType::FLOAT);
                            y = g.add(y, t[3]);
                          }
                          return std::vector<dg::TensorPtr>{y};
                        }, 1e-5, std::sqrt(double(k)));
  }
}

TEST(CpuGemmPacked, RejectsInt8WithAReason) {
  dg::Graph g;
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({4, 8}).set_stride({8, 1}).set_data_type(dg::DataType::INT8));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({8, 4}).set_stride({4, 1}).set_data_type(dg::DataType::INT8));
  auto c = g.matmul(a, b, dg::MatmulAttr());
  c->set_output(true).set_data_type(dg::DataType::INT32);
  const std::string e = cpu_test::explain(g);
  EXPECT_NE(e.find("cpu_gemm_packed: rejected: node"), std::string::npos) << e;
  EXPECT_NE(e.find("tensor 'A': data type INT8 is not supported"), std::string::npos) << e;
}

}  // namespace

// C = A x B over bf16 pairs: A and B row-major bf16, packed by the pair packers, K in pairs;
// `amx`: A in row-major tiles (a pointer per row), K padded to 16-pair steps, blocks of whole steps.
class PairProblem final : public cg::GemmProblem {
 public:
  cg::StridedMatrix a, bm;
  int64_t k_total = 0;
  bool amx = false;
  std::vector<float>* c = nullptr;
  PairProblem(int64_t m, int64_t n, int64_t k, bool amx_tiles) : k_total(k), amx(amx_tiles) {
    M = m;
    N = n;
    K = amx ? (k + 31) / 32 * 16 : (k + 1) / 2;
  }
  std::vector<cg::KBlock> k_blocks(int64_t kc) const override {
    if (!amx) return GemmProblem::k_blocks(kc);
    std::vector<cg::KBlock> out;
    for (int64_t k0 = 0; k0 < K; k0 += 16) out.push_back(cg::KBlock{k0, 1, std::min<int64_t>(16, K - k0)});
    return out;
  }
  void a_rows(int64_t, int64_t m0, int64_t mc, const cg::KBlock& kb, int mr, const float** rows,
              float* scratch) const override {
    if (amx) cg::pack_a_bf16_rows(a, m0, mc, kb.k0, kb.kc(), k_total, mr, scratch);
    else cg::pack_a_bf16_pairs(a, m0, mc, kb.k0, kb.kc(), k_total, mr, scratch);
    // The pair kernels take each tile's panel; the AMX kernel each row (it reads their spacing).
    for (int64_t i = 0; i < (mc + mr - 1) / mr * mr; ++i)
      rows[i] = scratch + (i / mr) * kb.kc() * mr + (amx ? (i % mr) * kb.kc() : 0);
  }
  int64_t a_scratch_floats(int64_t mc, int64_t kc) const override { return (mc + 32) * kc; }
  bool a_kmajor() const override { return true; }
  void pack_b(int64_t, int64_t n0, int64_t nc, int nr, float* dst) const override {
    cg::pack_b_bf16_pairs(bm, k_total, n0, nc, nr, K, dst);
  }
  void c_block(int, int64_t, int64_t m0, int64_t mc, int64_t n0, int64_t nc, const float* cb,
               int64_t ldc) const override {
    for (int64_t i = 0; i < mc; ++i)
      for (int64_t j = 0; j < nc; ++j) (*c)[static_cast<size_t>((m0 + i) * N + n0 + j)] = cb[i * ldc + j];
  }
};

void check_bf16_kernels(const cg::KernelSet& ks, bool amx) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-1, 1);
  dg::ThreadPool pool(2);
  // First M = 16, 40 and 49: tiles of 16 and 8 rows (AMX: the 16-row half kernel) and of 17.
  constexpr int64_t kShortTiles[] = {16, 40, 49};
  for (int trial = 0; trial < 9; ++trial) {
    const int64_t m = trial < 3 ? kShortTiles[trial] : 1 + rng() % 50;
    const int64_t n = 1 + rng() % 80, k = 1 + rng() % 90;  // odd k included
    std::vector<uint16_t> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = dg::dtype::float_to_bf16(u(rng));
    for (auto& v : b) v = dg::dtype::float_to_bf16(u(rng));
    std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
    PairProblem p(m, n, k, amx);
    p.a = {a.data(), dg::DataType::BFLOAT16, k, 1};
    p.bm = {b.data(), dg::DataType::BFLOAT16, n, 1};
    p.c = &c;
    cg::Blocking blk{2 * ks.mr, 8, 2 * ks.nr};  // several K blocks (of 8 pairs), M blocks, N tasks
    ASSERT_TRUE(cg::run(p, ks, blk, pool, nullptr).ok());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t q = 0; q < k; ++q)
          want += double(dg::dtype::bf16_to_float(a[static_cast<size_t>(i * k + q)])) *
                  dg::dtype::bf16_to_float(b[static_cast<size_t>(q * n + j)]);
        ASSERT_NEAR(c[static_cast<size_t>(i * n + j)], want, 1e-5 * (1 + std::fabs(want)) * std::sqrt(double(k)))
            << "m=" << m << " n=" << n << " k=" << k << " at " << i << "," << j;
      }
  }
}

TEST(CpuGemmKernels, Bf16PairKernelsMatchNaive) {
  if (!dg::cpu::cpu_features().avx512bf16 || !cg::avx512_bf16_kernels()) GTEST_SKIP() << "no AVX512_BF16 here";
  const auto shapes = cg::bf16_pair_shapes();  // 12 x 32 first, then 7 x 48, 14 x 32, 8 x 32, 16 x 16
  ASSERT_EQ(shapes.size(), 5u);
  EXPECT_EQ(shapes[0], cg::avx512_bf16_kernels());
  for (const cg::KernelSet* ks : shapes) {
    SCOPED_TRACE(std::to_string(ks->mr) + " x " + std::to_string(ks->nr));
    EXPECT_TRUE(cg::is_bf16_pairs(*ks));
    check_bf16_kernels(*ks, false);
  }
  EXPECT_FALSE(cg::is_bf16_pairs(cg::kernel_set(dg::cpu::Isa::AVX512)));
  // 7x7 images take 7-row tiles, 14x14 ones 14-row tiles, 16 channels 16-wide ones.
  EXPECT_EQ(cg::bf16_pair_kernel_for_shape(49, 512).mr, 7);
  EXPECT_EQ(cg::bf16_pair_kernel_for_shape(196, 256).mr, 14);
  EXPECT_EQ(cg::bf16_pair_kernel_for_shape(1000, 16).nr, 16);
  // 4x4 images (16 pixels) at any width: 8-row tiles, two B vectors (16 x 16 had a broadcast per FMA).
  EXPECT_EQ(cg::bf16_pair_kernel_for_shape(16, 512).mr, 8);
  EXPECT_EQ(cg::kernel_for_shape(dg::cpu::Isa::AVX512, 16, 512).mr, 8);
  EXPECT_EQ(&cg::bf16_pair_kernel_for_shape(1200, 64), cg::avx512_bf16_kernels());
}

// The pair packer's layout, slot (t, kp, i) = the word of pair kp0 + kp in row r0 + t * mr + i,
// on tiles of 6-16 rows (whole tiles of bf16 rows at an even stride go by 8 x 8 word transposes,
// overlapping where mr is not a multiple of 8), odd strides, odd K and short last tiles.
TEST(CpuGemmPack, Bf16PairPanelsHoldEachRowsPairs) {
  std::mt19937 rng(83);
  for (int trial = 0; trial < 40; ++trial) {
    const int mrs[] = {6, 8, 12, 16};
    const int mr = mrs[rng() % 4];
    const int64_t k = 1 + rng() % 70, rs = k + static_cast<int64_t>(rng() % 3), m = 1 + rng() % 40;
    const int64_t kp0 = rng() % ((k + 1) / 2), kpairs = 1 + rng() % ((k + 1) / 2 - kp0 + 3);
    const int64_t r0 = rng() % m, rows = 1 + rng() % (m - r0);
    std::vector<uint16_t> a(static_cast<size_t>(m * rs));
    for (auto& v : a) v = static_cast<uint16_t>(rng());
    const int64_t tiles = (rows + mr - 1) / mr;
    std::vector<float> out(static_cast<size_t>(tiles * kpairs * mr) + 1, std::nanf(""));
    cg::pack_a_bf16_pairs({a.data(), dg::DataType::BFLOAT16, rs, 1}, r0, rows, kp0, kpairs, k, mr, out.data());
    const auto* words = reinterpret_cast<const uint32_t*>(out.data());
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t kp = 0; kp < kpairs; ++kp)
        for (int i = 0; i < mr; ++i) {
          const int64_t r = t * mr + i, k0 = 2 * (kp0 + kp);
          auto at = [&](int64_t q) -> uint32_t {
            return r < rows && q < k ? a[static_cast<size_t>((r0 + r) * rs + q)] : 0u;
          };
          ASSERT_EQ(words[(t * kpairs + kp) * mr + i], at(k0) | (at(k0 + 1) << 16))
              << "mr " << mr << " k " << k << " stride " << rs << " rows " << rows << " kp0 " << kp0 << " at tile " << t
              << " pair " << kp << " row " << i;
        }
    EXPECT_TRUE(std::isnan(out.back()));  // nothing past the panels
  }
}

TEST(CpuGemmKernels, AmxBf16KernelMatchesNaive) {
  if (!cg::amx_bf16_kernels()) GTEST_SKIP() << "no AMX-BF16 here (or the OS did not grant the tile state)";
  check_bf16_kernels(*cg::amx_bf16_kernels(), true);
}

// bf16 A and B: the plan runs the AMX kernel where the CPU has it, else the bf16-pair kernels
// where bf16_pairs_faster() (K counted in pairs, an odd K's last pair half zero), else the fp32
// ones; each against ref, with
// transposed and broadcast operands and a fused bias + ReLU.
TEST(CpuGemmPacked, Bf16PairKernelsMatchRef) {
  if (dg::cpu::cpu_features().avx512bf16) {
    ASSERT_NE(cg::avx512_bf16_kernels(), nullptr);
  }
  std::mt19937 rng(23);
  for (int trial = 0; trial < 12; ++trial) {
    // Trials 8..11: k a multiple of 32 and m past one 16-row half, so AMX reads whole halves of A in
    // place (row strides of 32-128 or, in trials 10 and 11, 40-136 elements: none a multiple of
    // 512, which packs) beside packed partial ones.
    const bool whole = trial >= 8;
    const int64_t batch = 1 + rng() % 2, m = whole ? 17 + rng() % 60 : 1 + rng() % 40, n = 1 + rng() % 70,
                  k = whole ? 32 * (1 + rng() % 4) : 1 + rng() % 75, lda = trial >= 10 ? k + 8 : k;
    const bool b_transposed = trial % 2 == 1;
    HostTensor a = ref_test::make_tensor({batch, m, k}, {m * lda, lda, 1}, dg::DataType::BFLOAT16);
    a.randomize(rng, -1, 1);
    HostTensor b = b_transposed ? ref_test::make_tensor({1, k, n}, {k * n, 1, k}, dg::DataType::BFLOAT16)
                                : ref_test::make_tensor({1, k, n}, {k * n, n, 1}, dg::DataType::BFLOAT16);
    for (int64_t i = 0; i < k * n; ++i) dg::dtype::store(b.bytes.data(), dg::DataType::BFLOAT16, i, std::uniform_real_distribution<double>(-1, 1)(rng));
    auto bias = ref_test::random_tensor({1, 1, n}, dg::DataType::FLOAT, rng, -1, 1);
    SCOPED_TRACE("trial " + std::to_string(trial) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k));
    check_engine_vs_ref("cpu_gemm_packed", {a, b, bias}, {output_like({batch, m, n}, dg::DataType::FLOAT)},
                        [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                          return std::vector<dg::TensorPtr>{g.relu(g.bias(g.matmul(in[0], in[1], dg::MatmulAttr()), in[2]))};
                        }, 1e-5, std::sqrt(double(k)));
  }
}
