// cuda_norm_rowwise on a GPU (skipped without one, failed under DNNGRAPH_REQUIRE_GPU=1): layernorm
// and rmsnorm forward and backward against ref on seeded random shapes in FLOAT, HALF and BFLOAT16,
// every plan of the knob space (the staged backward rows included where released), outputs
// NaN-poisoned before every plan, and the backward's column sums bit-identical run to run.
#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "norm_test_util.hpp"
#include "runtime/memory.hpp"

namespace {

using namespace norm_test;
// ---- on a GPU, against ref

// Row lengths around the vector width, the warp/block boundaries, the register limits and 65536.
constexpr int64_t kRowLengths[] = {1, 3, 8, 33, 100, 256, 257, 1000, 1024, 2048, 4096, 4100,
                                   8192, 12345, 16384, 24576, 32768, 65536, 65544, 65537};

// X's dims for `rows` rows of length `len`: rank 2, or the row split into two or three dims.
Dims row_dims(int64_t rows, int64_t len, std::mt19937& rng) {
  switch (rng() % 3) {
    case 0: return {rows, len};
    case 1: return len % 8 == 0 ? Dims{rows, len / 8, 8} : Dims{rows, 1, len};
    default: return len % 4 == 0 ? Dims{rows, 2, len / 4, 2} : Dims{rows, len, 1, 1};
  }
}

T random_type(std::mt19937& rng) {
  const T types[] = {T::FLOAT, T::HALF, T::BFLOAT16};
  return types[rng() % 3];
}

// One trial's X (1-70 rows of `len`, at most 2^20 elements, in row_dims' shapes) and types.
std::pair<Dims, Types> random_case(int64_t len, std::mt19937& rng) {
  const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(1 + rng() % 70, (int64_t{1} << 20) / len));
  Dims x = row_dims(rows, len, rng);
  return {std::move(x), Types{random_type(rng), random_type(rng), random_type(rng)}};
}

HostTensor random_input(const Dims& d, T t, std::mt19937& rng, double lo = -2, double hi = 2) {
  HostTensor h = gemm_test::packed(d, t);
  gemm_test::fill_random(h, rng, lo, hi);
  return h;
}

// Column sums over `rows` rows in fp32: their rounding grows with the rows, so values below a
// floor that grows with them are compared absolutely.
gemm_test::Expect column_sum_expect(T t, int64_t rows) {
  return {std::max(ref_test::tolerance(t), 5e-5), std::max(1.0, static_cast<double>(rows) / 8)};
}

class CudaNormGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = dg::cuda::testing::cuda_handle(why_);
    DG_SKIP_WITHOUT_GPU(h_, why_);
  }
  std::string why_;
  std::unique_ptr<dg::Handle> h_;
};

TEST_F(CudaNormGpu, ForwardMatchesRef) {
  std::mt19937 rng(1801);
  int trial = 0;
  for (const int64_t len : kRowLengths)
    for (const bool layernorm : {true, false}) {
      const auto drawn = random_case(len, rng);
      const Dims& x = drawn.first;
      const Types t = drawn.second;
      const bool bias = layernorm || rng() % 2, stats = rng() % 2;
      SCOPED_TRACE("trial " + std::to_string(trial++) + (layernorm ? " layernorm" : " rmsnorm") + " X " +
                   ::testing::PrintToString(x) + " " + std::string(dg::to_string(t.io)) + (bias ? " bias" : "") +
                   (stats ? " stats" : ""));
      std::vector<HostTensor> in{random_input(x, t.io, rng, layernorm ? 3 : -2, layernorm ? 5 : 2),
                                 random_input(row_param(x), t.param, rng)};
      if (bias) in.push_back(random_input(row_param(x), t.param, rng));
      std::vector<HostTensor> outs{gemm_test::packed(x, t.out)};
      std::vector<gemm_test::Expect> expect{{-1, 1}};
      for (int i = 0; stats && i < (layernorm ? 2 : 1); ++i) {
        outs.push_back(gemm_test::packed(stat_dims(x), T::FLOAT));
        expect.push_back({1e-5, 1});
      }
      gemm_test::run_vs_ref(kEngine, std::move(in), outs, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
        g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
        const auto phase = stats ? dg::NormFwdPhase::TRAINING : dg::NormFwdPhase::INFERENCE;
        std::vector<dg::TensorPtr> o;
        if (layernorm) {
          auto r = g.layernorm(ts[0], ts[1], ts[2], dg::LayernormAttr().set_epsilon(1e-5).set_forward_phase(phase));
          o.assign(r.begin(), stats ? r.end() : r.begin() + 1);
        } else {
          auto a = dg::RmsnormAttr().set_epsilon(1e-5).set_forward_phase(phase);
          if (bias) a.set_bias(ts[2]);
          auto r = g.rmsnorm(ts[0], ts[1], a);
          o.assign(r.begin(), stats ? r.end() : r.begin() + 1);
        }
        return o;
      }, expect, 8);  // every knob setting
    }
}

TEST_F(CudaNormGpu, BackwardMatchesRef) {
  std::mt19937 rng(1802);
  int trial = 0;
  for (const int64_t len : kRowLengths)
    for (const bool layernorm : {true, false}) {
      const auto drawn = random_case(len, rng);
      const Dims& x = drawn.first;
      const Types t = drawn.second;
      const int64_t rows = x[0];
      const bool dbias = layernorm || rng() % 2;
      SCOPED_TRACE("trial " + std::to_string(trial++) + (layernorm ? " layernorm" : " rmsnorm") + "_backward X " +
                   ::testing::PrintToString(x) + " " + std::string(dg::to_string(t.io)) + (dbias ? " dbias" : ""));
      std::vector<HostTensor> in{random_input(x, t.io, rng), random_input(x, t.io, rng),
                                 random_input(row_param(x), t.param, rng)};
      if (layernorm) in.push_back(random_input(stat_dims(x), T::FLOAT, rng, -1, 1));
      in.push_back(random_input(stat_dims(x), T::FLOAT, rng, 0.25, 2));
      std::vector<HostTensor> outs{gemm_test::packed(x, t.out), gemm_test::packed(row_param(x), t.param)};
      std::vector<gemm_test::Expect> expect{{-1, 1}, column_sum_expect(t.param, rows)};
      if (dbias) {
        outs.push_back(gemm_test::packed(row_param(x), t.param));
        expect.push_back(column_sum_expect(t.param, rows));
      }
      gemm_test::run_vs_ref(kEngine, std::move(in), outs, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
        g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
        std::array<dg::TensorPtr, 3> r;
        if (layernorm) r = g.layernorm_backward(ts[0], ts[1], ts[2], ts[3], ts[4], {});
        else r = g.rmsnorm_backward(ts[0], ts[1], ts[2], ts[3], dg::RmsnormBackwardAttr().set_has_dbias(dbias));
        std::vector<dg::TensorPtr> o{r[0], r[1]};
        if (dbias) o.push_back(r[2]);
        return o;
      }, expect, 8);
    }
}

// The column sums are folded in a fixed order: two runs give the same bits.
TEST_F(CudaNormGpu, BackwardColumnSumsAreBitIdenticalRunToRun) {
  std::mt19937 rng(1803);
  dg::HandleImpl& h = impl_of(*h_);
  const Dims x{777, 1000};
  std::vector<HostTensor> host{random_input(x, T::BFLOAT16, rng), random_input(x, T::BFLOAT16, rng),
                               random_input(row_param(x), T::FLOAT, rng), random_input(stat_dims(x), T::FLOAT, rng),
                               random_input(stat_dims(x), T::FLOAT, rng, 0.25, 2), gemm_test::packed(x, T::BFLOAT16),
                               gemm_test::packed(row_param(x), T::FLOAT), gemm_test::packed(row_param(x), T::FLOAT)};
  dg::Graph g;
  g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
  std::vector<dg::TensorPtr> ts;
  for (size_t i = 0; i < 5; ++i) ts.push_back(host[i].declare(g, "in" + std::to_string(i)));
  auto o = g.layernorm_backward(ts[0], ts[1], ts[2], ts[3], ts[4], {});
  for (size_t i = 0; i < 3; ++i) {
    host[5 + i].describe(o[i]);
    ts.push_back(o[i]);
  }
  g.select_engines({kEngine});
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*h_).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.check_support(*h_).ok()) << g.explain();
  ASSERT_TRUE(g.build_plans(*h_, dg::BuildPlanPolicy::HEURISTICS_CHOICE).ok());
  std::vector<dg::memory::Buffer> bufs;
  dg::VariantPack pack;
  for (size_t i = 0; i < host.size(); ++i) {
    bufs.emplace_back(h, host[i].bytes.size());
    ASSERT_TRUE(bufs.back().status().ok());
    ASSERT_TRUE(dg::memory::copy_to_device(h, bufs.back().get(), host[i].bytes.data(), host[i].bytes.size()).ok());
    pack[ts[i]] = bufs.back().get();
  }
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  dg::memory::Buffer workspace(h, static_cast<size_t>(ws) + 256);
  std::vector<std::vector<uint8_t>> first(3);
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE(g.execute(*h_, pack, workspace.get(), ws).ok());
    ASSERT_TRUE(dg::memory::synchronize(h).ok());
    for (size_t i = 0; i < 3; ++i) {
      std::vector<uint8_t> got(host[5 + i].bytes.size());
      ASSERT_TRUE(dg::memory::copy_to_host(h, got.data(), bufs[5 + i].get(), got.size()).ok());
      if (run == 0) first[i] = std::move(got);
      else EXPECT_EQ(got, first[i]) << "output " << i << " differs between runs";
    }
  }
}

// Without DNNGRAPH_UNCHECKED_ENGINES the engine is offered (its gate was lifted after these tests
// passed on an H200).
TEST_F(CudaNormGpu, OfferedWithoutTheEnvironmentVariable) {
  ScopedEnv off("DNNGRAPH_UNCHECKED_ENGINES", nullptr);
  dg::Graph g;
  add_forward(g, true, {4, 64}, {T::BFLOAT16, T::BFLOAT16, T::BFLOAT16}, true, false);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*h_).ok());
  (void)g.create_execution_plans({dg::HeurMode::FALLBACK});
  EXPECT_EQ(g.explain().find(std::string(kEngine) + ": rejected"), std::string::npos) << g.explain();
}

}  // namespace
