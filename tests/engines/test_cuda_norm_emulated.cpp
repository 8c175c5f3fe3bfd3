// kernels/norm_rowwise.cuh compiled for the host and run by a small emulation of a CUDA block (one
// std::thread per CUDA thread, __syncthreads as a block barrier, warp shuffles through a per-warp
// exchange), against double-precision formulas: the kernels' indexing, masks, reductions, the
// register-resident and streamed rows, warp groups sharing a block, and the column sums' slices
// and second pass are checked here, where no GPU is. What it cannot check (the NVRTC build, PTX
// conversions, timing, memory-model effects) is the NVRTC and GPU tests' (test_cuda_norm.cpp).
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "core/dtype.hpp"

namespace host_cuda {

struct Dim3 {
  unsigned x = 0;
};
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim, gridDim;

// The barriers of the block being run: the whole block, and each warp (for shuffles).
struct Warp {
  explicit Warp() : bar(32) {}
  std::barrier<> bar;
  float slot[32] = {};
};
struct Block {
  explicit Block(unsigned threads) : bar(static_cast<std::ptrdiff_t>(threads)) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>());
  }
  std::barrier<> bar;
  std::vector<std::unique_ptr<Warp>> warps;
};
Block* g_block = nullptr;

inline void __syncthreads() { g_block->bar.arrive_and_wait(); }

// Lane `src` of this thread's warp's value of v (every lane of the warp calls it).
inline float shuffle(float v, unsigned src) {
  Warp& w = *g_block->warps[threadIdx.x / 32];
  w.slot[threadIdx.x % 32] = v;
  w.bar.arrive_and_wait();
  const float r = w.slot[src];
  w.bar.arrive_and_wait();
  return r;
}
inline float __shfl_sync(unsigned, float v, int src) { return shuffle(v, static_cast<unsigned>(src)); }
inline float __shfl_xor_sync(unsigned, float v, int o) { return shuffle(v, (threadIdx.x % 32) ^ static_cast<unsigned>(o)); }
inline float __shfl_down_sync(unsigned, float v, int o) {
  const unsigned lane = threadIdx.x % 32, src = lane + static_cast<unsigned>(o);
  return shuffle(v, src < 32 ? src : lane);
}

#include "host_cuda_shims.inl"
#define __shared__ static
inline float sqrtf(float x) { return std::sqrt(x); }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "engines/cuda/kernels/norm_rowwise.cuh"
#pragma GCC diagnostic pop
#undef __device__
#undef __forceinline__
#undef __shared__

// Runs body() as a grid of `grid` blocks of `block` threads, one block after another.
inline void launch(unsigned grid, unsigned block, const std::function<void()>& body) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    Block blk(block);
    g_block = &blk;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([&, t, b] {
        threadIdx.x = t;
        blockIdx.x = b;
        body();
      });
    for (auto& t : threads) t.join();
  }
}

}  // namespace host_cuda

namespace {

namespace dg = dnngraph;
namespace k = host_cuda::dg;
using dg::DataType;

// A kernel configuration as the engine writes it (cuda/norm/norm_problem.cpp's config_source).
template <bool kBwd, bool kLn, int kIo, int kParam, int kV, int kT, int kR, int kK, bool kBias, bool kStats,
          bool kPre = true>
struct Cfg {
  enum : bool { kBackward = kBwd, kLayernorm = kLn, kHasBias = !kBwd && kBias, kMeanOut = !kBwd && kStats && kLn };
  enum : bool { kInvOut = !kBwd && kStats, kDx = true, kPartials = kBwd, kDscale = kBwd, kDbias = kBwd && kBias };
  enum : bool { kPrefetch = kBwd && kK > 0 && kPre };
  enum : int { kXType = kIo, kDyType = kIo, kOutType = kIo, kScaleType = kParam, kBiasType = kParam };
  enum : int { kDscaleType = kParam, kDbiasType = kParam, kVec = kV, kThreads = kT, kRows = kR, kItems = kK };
};

DataType type_of(int dt) { return static_cast<DataType>(dt); }

// A host tensor of n elements of type t: random in [lo, hi) (as stored), or NaN.
struct Buf {
  DataType t;
  std::vector<uint8_t> bytes;
  std::vector<double> v;  // the stored values, as doubles
  Buf(DataType type, int64_t n) : t(type), bytes(static_cast<size_t>(n * dg::size_of(type))), v(static_cast<size_t>(n)) {
    for (int64_t i = 0; i < n; ++i) dg::dtype::store(bytes.data(), t, i, std::nan(""));
  }
  Buf(DataType type, int64_t n, std::mt19937& rng, double lo, double hi) : Buf(type, n) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < n; ++i) {
      dg::dtype::store(bytes.data(), t, i, u(rng));
      v[static_cast<size_t>(i)] = dg::dtype::load(bytes.data(), t, i);
    }
  }
  double at(int64_t i) const { return dg::dtype::load(bytes.data(), t, i); }
  void* data() { return bytes.data(); }
};

double tol(DataType t) { return t == DataType::BFLOAT16 ? 1e-2 : t == DataType::HALF ? 3e-3 : 1e-5; }

void expect_near(const Buf& got, int64_t i, double want, double floor, const char* what, double t = -1) {
  const double g = got.at(i);
  EXPECT_LE(std::fabs(g - want), (t < 0 ? tol(got.t) : t) * std::max(std::fabs(want), floor))
      << what << "[" << i << "]: got " << g << " want " << want;
}

// Forward: Y (and the statistics) of `rows` rows of `cols`, on `grid` blocks; X in [lo, hi). Y's
// tolerance: its type's, or y_tol.
template <class C>
void check_forward(int64_t rows, int64_t cols, unsigned grid, double lo, double hi, double y_tol = -1) {
  std::mt19937 rng(static_cast<uint32_t>(rows * 1000 + cols));
  const DataType io = type_of(C::kXType), pt = type_of(C::kScaleType);
  Buf x(io, rows * cols, rng, lo, hi), scale(pt, cols, rng, -2, 2), bias(pt, cols, rng, -2, 2);
  Buf y(io, rows * cols), mean(DataType::FLOAT, rows), inv(DataType::FLOAT, rows);
  k::NormParams P{};
  P.x = x.data(), P.scale = scale.data(), P.bias = C::kHasBias ? bias.data() : nullptr, P.out = y.data();
  P.mean_out = static_cast<float*>(mean.data()), P.inv_out = static_cast<float*>(inv.data());
  P.rows = rows, P.cols = cols, P.x_pitch = cols, P.out_pitch = cols, P.mean_pitch = 1, P.inv_pitch = 1;
  P.eps = 1e-5f, P.inv_cols = static_cast<float>(1.0 / static_cast<double>(cols));
  host_cuda::launch(grid, C::kThreads * C::kRows, [&] { k::norm_rowwise<C>(P); });
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, q = 0;
    for (int64_t c = 0; c < cols; ++c) m += C::kLayernorm ? x.v[static_cast<size_t>(r * cols + c)] : 0.0;
    m /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) q += std::pow(x.v[static_cast<size_t>(r * cols + c)] - m, 2);
    const double iv = 1.0 / std::sqrt(q / static_cast<double>(cols) + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      const double want = (x.v[static_cast<size_t>(r * cols + c)] - m) * iv * scale.v[static_cast<size_t>(c)] +
                          (C::kHasBias ? bias.v[static_cast<size_t>(c)] : 0.0);
      expect_near(y, r * cols + c, want, 1.0, "Y", y_tol);
    }
    if (C::kMeanOut) expect_near(mean, r, m, 1.0, "MEAN");
    if (C::kInvOut) expect_near(inv, r, iv, 1.0, "INV");
    if (::testing::Test::HasFailure()) return;
  }
}

// Backward: DX, DSCALE, DBIAS; the column sums in `grid` slices, then the second pass.
template <class C>
void check_backward(int64_t rows, int64_t cols, unsigned grid) {
  std::mt19937 rng(static_cast<uint32_t>(rows * 1000 + cols + 7));
  const DataType io = type_of(C::kXType), pt = type_of(C::kScaleType);
  Buf dy(io, rows * cols, rng, -2, 2), x(io, rows * cols, rng, -2, 2), scale(pt, cols, rng, -2, 2);
  Buf mean(DataType::FLOAT, rows, rng, -1, 1), inv(DataType::FLOAT, rows, rng, 0.25, 2);
  Buf dx(io, rows * cols), dscale(pt, cols), dbias(pt, cols), partials(DataType::FLOAT, 2 * grid * cols);
  k::NormParams P{};
  P.x = x.data(), P.dy = dy.data(), P.scale = scale.data(), P.out = dx.data();
  P.mean = static_cast<const float*>(mean.data()), P.inv = static_cast<const float*>(inv.data());
  P.partials = static_cast<float*>(partials.data());
  P.rows = rows, P.cols = cols, P.x_pitch = cols, P.dy_pitch = cols, P.out_pitch = cols, P.mean_pitch = 1;
  P.inv_pitch = 1, P.inv_cols = static_cast<float>(1.0 / static_cast<double>(cols));
  host_cuda::launch(grid, C::kThreads * C::kRows, [&] { k::norm_rowwise<C>(P); });
  k::NormFinalizeParams F{P.partials, dscale.data(), C::kDbias ? dbias.data() : nullptr, cols, grid};
  // The engine's 32 slice lanes where the grid is small enough for a thread per CUDA thread here.
  if (cols <= 1024) host_cuda::launch(static_cast<unsigned>((cols + 31) / 32), 1024, [&] { k::norm_partials<C, 32>(F); });
  else host_cuda::launch(static_cast<unsigned>((cols + 31) / 32), 64, [&] { k::norm_partials<C, 2>(F); });
  std::vector<double> ds(static_cast<size_t>(cols), 0.0), db(static_cast<size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double m = C::kLayernorm ? mean.v[static_cast<size_t>(r)] : 0.0, iv = inv.v[static_cast<size_t>(r)];
    double sg = 0, sgx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double xh = (x.v[i] - m) * iv, g = dy.v[i] * scale.v[static_cast<size_t>(c)];
      sg += g, sgx += g * xh;
      ds[static_cast<size_t>(c)] += dy.v[i] * xh, db[static_cast<size_t>(c)] += dy.v[i];
    }
    const double n = static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double xh = (x.v[i] - m) * iv, g = dy.v[i] * scale.v[static_cast<size_t>(c)];
      expect_near(dx, r * cols + c, iv * (g - (C::kLayernorm ? sg / n : 0.0) - xh * sgx / n), 1.0, "DX");
    }
    if (::testing::Test::HasFailure()) return;
  }
  const double floor = std::max(1.0, static_cast<double>(rows) / 8);
  for (int64_t c = 0; c < cols; ++c) {
    expect_near(dscale, c, ds[static_cast<size_t>(c)], floor, "DSCALE");
    if (C::kDbias) expect_near(dbias, c, db[static_cast<size_t>(c)], floor, "DBIAS");
    else EXPECT_TRUE(std::isnan(dbias.at(c))) << "DBIAS written without kDbias";
  }
}

constexpr int F32 = k::DT_FLOAT, F16 = k::DT_HALF, BF16 = k::DT_BFLOAT16;

// Warp groups, 4 per block, two vectors of 8 per lane (the last one partly past the row).
TEST(CudaNormEmulated, LayernormForwardWarpGroupsResident) {
  check_forward<Cfg<false, true, BF16, BF16, 8, 32, 4, 2, true, true>>(9, 400, 2, 3, 5);
}
// A block of 64 threads per row, scalar access, an odd row length.
TEST(CudaNormEmulated, LayernormForwardBlockRowScalar) {
  check_forward<Cfg<false, true, F32, F16, 1, 64, 1, 3, true, true>>(5, 151, 2, -2, 2);
}
// Streamed rows (Chan's merge of per-vector moments) with a mean far from zero: 1000.5 with a
// standard deviation of 0.29. The fp32 mean itself is off by up to 1000.5 * 2^-24, 2e-4 of the
// deviation, which bounds Y's error (fp32 arithmetic, as PyTorch's); sums of squares about zero
// would lose the variance entirely (x^2 ~ 1e6 carries an error of ~0.06, near the variance 0.083).
TEST(CudaNormEmulated, LayernormForwardStreamedKeepsTheVarianceOfAnOffsetRow) {
  check_forward<Cfg<false, true, F32, F32, 4, 128, 1, 0, true, true>>(3, 3000, 2, 1000, 1001, 1e-3);
  check_forward<Cfg<false, true, F32, F32, 4, 128, 1, 0, true, true>>(3, 3000, 2, 3, 5);
}
// The same offset row held in registers: the variance from the deviations about the mean.
TEST(CudaNormEmulated, LayernormForwardResidentKeepsTheVarianceOfAnOffsetRow) {
  check_forward<Cfg<false, true, F32, F32, 4, 128, 1, 6, true, true>>(3, 3000, 2, 1000, 1001, 1e-3);
}
TEST(CudaNormEmulated, RmsnormForwardWithoutBias) {
  check_forward<Cfg<false, false, F16, F32, 8, 32, 2, 1, false, true>>(7, 200, 3, -2, 2);
  check_forward<Cfg<false, false, BF16, BF16, 8, 256, 1, 0, true, false>>(2, 4104, 1, -2, 2);
}
// Warp groups fold their column sums in shared memory: 37 rows over 3 blocks of 4 groups.
TEST(CudaNormEmulated, LayernormBackwardWarpGroups) {
  check_backward<Cfg<true, true, BF16, BF16, 8, 32, 4, 2, true, false>>(37, 400, 3);
}
TEST(CudaNormEmulated, LayernormBackwardBlockRowScalar) {
  check_backward<Cfg<true, true, F32, F32, 1, 64, 1, 2, true, false>>(20, 101, 3);
}
// Rows in registers that wait for their own loads (prefetch=0): the same sums and DX.
TEST(CudaNormEmulated, BackwardWithoutPrefetch) {
  check_backward<Cfg<true, true, BF16, BF16, 8, 32, 4, 2, true, false, false>>(37, 400, 3);
  check_backward<Cfg<true, false, BF16, BF16, 8, 512, 1, 2, true, false, false>>(5, 8192, 2);
}
// Streamed: each block's first row writes its slice, the later ones add.
TEST(CudaNormEmulated, RmsnormBackwardStreamed) {
  check_backward<Cfg<true, false, F16, F32, 8, 64, 1, 0, true, false>>(9, 1000, 2);
  check_backward<Cfg<true, false, F32, F32, 4, 32, 1, 0, false, false>>(5, 300, 2);
}

// Odd rows too long for registers: scalar access, streamed.
TEST(CudaNormEmulated, ScalarStreamed) {
  check_forward<Cfg<false, true, BF16, F32, 1, 64, 1, 0, true, true>>(4, 1001, 3, 3, 5);
  check_backward<Cfg<true, true, BF16, BF16, 1, 64, 1, 0, true, false>>(7, 1001, 3);
}

// The bench's configurations (8192-wide bf16 rows: 256 threads x 4 vectors forward, 512 x 2
// backward) and the widest blocks (1024 threads, 3 vectors forward, 1 backward).
TEST(CudaNormEmulated, WideBlocks) {
  check_forward<Cfg<false, true, BF16, BF16, 8, 256, 1, 4, true, true>>(3, 8192, 2, -2, 2);
  check_forward<Cfg<false, false, BF16, BF16, 8, 1024, 1, 3, false, true>>(2, 24576, 1, -2, 2);
  check_backward<Cfg<true, true, BF16, BF16, 8, 512, 1, 2, true, false>>(5, 8192, 2);
  check_backward<Cfg<true, true, F16, F32, 8, 1024, 1, 1, true, false>>(3, 8000, 2);
}

}  // namespace
