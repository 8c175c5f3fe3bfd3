// What the CPU GEMM tests share: a plain row-major problem for the blocked driver (A gathered,
// packed k-major or read in place; C blocks recorded) and a check against the product in double.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <vector>

#include "engines/cpu/gemm/driver.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "ref_test_util.hpp"

namespace cpu_gemm_test {

namespace dg = dnngraph;
namespace cg = dnngraph::cpu::gemm;

// C = A x B over row-major fp32 (or bf16 A), with C handed back block by block.
class PlainProblem final : public cg::GemmProblem {
 public:
  cg::StridedMatrix a, bm;
  std::vector<float>* c = nullptr;
  bool gathered = false;                          // a_gathered()
  bool kmajor = false;                            // a_kmajor(): A packed in k-major panels per task
  mutable std::atomic<int64_t> rows_gathered{0};  // rows a_rows copied, over every task
  struct Block {
    int64_t m0, mc, n0, nc;
  };
  bool record_blocks = false;  // c_block's blocks, in `blocks`
  mutable std::vector<Block> blocks;
  mutable std::mutex blocks_mutex;
  PlainProblem(int64_t m, int64_t n, int64_t k) {
    M = m;
    N = n;
    K = k;
  }
  // Row-major fp32 A (M x K) and B (K x N), C (M x N) handed back into `out`.
  void bind(const std::vector<float>& a_rows, const std::vector<float>& b_rows, std::vector<float>& out) {
    a = {a_rows.data(), dg::DataType::FLOAT, K, 1};
    bm = {b_rows.data(), dg::DataType::FLOAT, N, 1};
    c = &out;
  }
  void a_rows(int64_t, int64_t m0, int64_t mc, const cg::KBlock& kb, int mr, const float** rows,
              float* scratch) const override {
    rows_gathered += mc;
    const int64_t tiles = (mc + mr - 1) / mr;
    if (kmajor) {
      cg::pack_a_panels(a, m0, mc, kb.k0, kb.kc(), mr, scratch);
      for (int64_t i = 0; i < tiles * mr; ++i) rows[i] = scratch + (i / mr) * kb.kc() * mr;
      return;
    }
    cg::pack_rows(a, m0, mc, kb.k0, kb.kc(), scratch, kb.kc());
    for (int64_t i = 0; i < tiles * mr; ++i) rows[i] = scratch + std::min(i, mc - 1) * kb.kc();
  }
  int64_t a_scratch_floats(int64_t mc, int64_t kc) const override { return (mc + 32) * kc; }
  bool a_gathered() const override { return gathered; }
  bool a_kmajor() const override { return kmajor; }
  void pack_b(int64_t, int64_t n0, int64_t nc, int nr, float* dst) const override {
    cg::pack_panels(bm, K, n0, nc, nr, dst);
  }
  void c_block(int, int64_t, int64_t m0, int64_t mc, int64_t n0, int64_t nc, const float* cb,
               int64_t ldc) const override {
    for (int64_t i = 0; i < mc; ++i)
      for (int64_t j = 0; j < nc; ++j) (*c)[static_cast<size_t>((m0 + i) * N + n0 + j)] = cb[i * ldc + j];
    if (record_blocks) {
      std::lock_guard<std::mutex> lock(blocks_mutex);
      blocks.push_back({m0, mc, n0, nc});
    }
  }
};

// Whether C (m x n, row-major) is A x B (m x k, k x n) within 1e-4 of the product in double.
inline ::testing::AssertionResult matches_naive(const std::vector<float>& a, const std::vector<float>& b,
                                         const std::vector<float>& c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < k; ++q) want += double(a[static_cast<size_t>(i * k + q)]) * b[static_cast<size_t>(q * n + j)];
      if (!(std::fabs(c[static_cast<size_t>(i * n + j)] - want) <= 1e-4))  // a NaN (unwritten) fails too
        return ::testing::AssertionFailure() << "at " << i << "," << j << ": " << c[static_cast<size_t>(i * n + j)]
                                             << " against " << want;
    }
  return ::testing::AssertionSuccess();
}

}  // namespace cpu_gemm_test
