// cuda_layout_copy: its module compiles with NVRTC for every architecture it serves (no GPU
// needed), the GPU gate offers it, and on a GPU (skipped without
// one) reshapes, transposes, slices and concatenations of seeded random shapes, strides and types
// match ref exactly, through the wide-unit path and, with misaligned pointers, the element path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <numeric>
#include <random>

#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/layout/layout_copy.hpp"
#include "engines/ref_test_util.hpp"
#include "engines/test_cuda_util.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using T = DataType;
constexpr const char* kEngine = "cuda_layout_copy";

TEST(CudaLayoutCopyBuild, ModuleCompilesForEveryArchitecture) {
  if (!nvrtc()) GTEST_SKIP() << nvrtc_error();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    std::vector<uint8_t> cubin;
    const Status s = nvrtc_compile(layout_copy_module_source(), "layout_copy.cu", arch, cubin);
    EXPECT_TRUE(s.ok()) << arch << ": " << s.to_string();
    EXPECT_FALSE(cubin.empty()) << arch;
  }
}

// Its kernels passed these tests on an H100 (2026-12-05), so the gate no longer holds it back.
TEST(CudaLayoutCopyBuild, OfferedWithoutListing) {
  ::unsetenv("DNNGRAPH_UNCHECKED_ENGINES");
  std::string why;
  EXPECT_TRUE(checked_on_gpu(kEngine, "", why)) << why;
}

class CudaLayoutCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = cuda_handle(skip_);
    DG_SKIP_WITHOUT_GPU(h_, skip_);
  }
  // Every case twice: aligned (wide units where the runs allow) and one element off (element path).
  void expect_exact(const Builder& build, uint32_t seed) {
    for (int64_t misalign : {0, 1}) {
      RunOptions o;
      o.engine = kEngine;
      o.seed = seed;
      o.misalign_elements = misalign;
      SCOPED_TRACE("misaligned by " + std::to_string(misalign));
      expect_matches_ref(build, *h_, o, 0.0);
    }
  }
  std::string skip_;
  std::unique_ptr<dg::Handle> h_;
};

T random_type(std::mt19937& rng) {
  static const T kTypes[] = {T::FLOAT, T::HALF, T::BFLOAT16, T::INT8, T::DOUBLE};
  return kTypes[rng() % 5];
}

// Output `y` keeps inference's strides (rng odd) or random ones.
void describe_output(const dg::TensorPtr& y, const std::vector<int64_t>& dims, std::mt19937& rng) {
  y->set_output(true);
  if (rng() % 2) y->set_stride(ref_test::random_strides(dims, rng));
}

TEST_F(CudaLayoutCopy, RandomReshapesTransposesSlicesMatchRef) {
  std::mt19937 rng(81);
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const T t = random_type(rng);
    const auto dims = ref_test::random_dims(rng, 1 + rng() % 4, 9);
    const auto x_strides = ref_test::random_strides(dims, rng);
    const int kind = trial % 3;
    std::vector<int64_t> perm(dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    expect_exact([&](dg::Graph& g) {
      auto X = input(g, "X", dims, t, x_strides);
      std::mt19937 local(trial);
      if (kind == 0) {
        const int64_t n = std::accumulate(dims.begin(), dims.end(), int64_t{1}, std::multiplies<>());
        describe_output(g.reshape(X, dg::ReshapeAttr().set_dim({n})), {n}, local);
      } else if (kind == 1) {
        std::vector<int64_t> yd(dims.size());
        for (size_t i = 0; i < perm.size(); ++i) yd[i] = dims[static_cast<size_t>(perm[i])];
        describe_output(g.transpose(X, dg::TransposeAttr().set_permutation(perm)), yd, local);
      } else {
        std::vector<std::pair<int64_t, int64_t>> slices;
        std::vector<int64_t> yd = dims;
        for (size_t i = 0; i < dims.size(); ++i) {
          const int64_t a = static_cast<int64_t>(local() % static_cast<uint32_t>(dims[i]));
          slices.push_back({a, dims[i]});
          yd[i] = dims[i] - a;
        }
        describe_output(g.slice(X, dg::SliceAttr().set_slices(slices)), yd, local);
      }
    }, static_cast<uint32_t>(trial + 1));
  }
}

TEST_F(CudaLayoutCopy, ConcatenationsAndLongRunsMatchRef) {
  std::mt19937 rng(82);
  for (int trial = 0; trial < 12; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const T t = trial % 2 ? T::BFLOAT16 : T::FLOAT;
    std::vector<int64_t> base = {2, 1 + static_cast<int64_t>(rng() % 40), 3, 64};  // NHWC-like rows of 64
    const int64_t axis = static_cast<int64_t>(rng() % base.size());
    expect_exact([&](dg::Graph& g) {
      std::vector<dg::TensorPtr> xs;
      for (int i = 0; i < 3; ++i) {
        auto d = base;
        d[static_cast<size_t>(axis)] += i;
        xs.push_back(input(g, "X" + std::to_string(i), d, t));
      }
      g.concatenate(xs, dg::ConcatenateAttr().set_axis(axis))->set_output(true);
    }, static_cast<uint32_t>(trial + 100));
  }
  // A packed reshape large enough for a full grid of 16-byte units.
  expect_exact([&](dg::Graph& g) {
    g.reshape(input(g, "X", {64, 257, 130}, T::HALF), dg::ReshapeAttr().set_dim({64 * 257, 130}))->set_output(true);
  }, 7);
}

}  // namespace
}  // namespace dnngraph::cuda
