// The reference sdpa_backward against central finite differences of the reference forward: for
// L = sum(O * dO), dQ, dK and dV must be dL/dQ, dL/dK and dL/dV, on seeded random small shapes
// with GQA/MQA, every mask, padding, BHSD and BSHD layouts (fp32, so the differences are exact enough).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "sdpa_backward_test_util.hpp"

namespace dg = dnngraph;

namespace {

using sdpa_test::BwdInputs;
using sdpa_test::Case;
using sdpa_test::Grads;
using sdpa_test::Tensor4;

// The forward on ref, built once, run again for each perturbed input.
class ForwardLoss {
 public:
  ForwardLoss(const Case& c, BwdInputs& in) : c_(c), in_(in) {
    g_.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({"ref"});
    t_ = sdpa_test::add_sdpa(g_, c, in.fwd);
    sdpa_test::poisoned_results(c, o_, stats_);
    ok_ = sdpa_test::plan_mode_a(g_, handle_) && g_.build_plans(handle_).ok();
  }
  bool ok() const { return ok_; }

  // sum(O * dO) in double.
  double loss() {
    std::vector<int32_t> sq = in_.fwd.seq_q, skv = in_.fwd.seq_kv;
    dg::VariantPack pack{{t_.Q, in_.fwd.q.bytes.data()}, {t_.K, in_.fwd.k.bytes.data()},
                         {t_.V, in_.fwd.v.bytes.data()}, {t_.O, o_.bytes.data()}};
    if (c_.padding) pack[t_.SQ] = sq.data(), pack[t_.SKV] = skv.data();
    EXPECT_TRUE(g_.execute(handle_, pack, nullptr).ok());
    double l = 0;
    for (int64_t b = 0; b < c_.b; ++b)
      for (int64_t h = 0; h < c_.h; ++h)
        for (int64_t s = 0; s < c_.sq; ++s)
          for (int64_t x = 0; x < c_.dv; ++x) l += o_.at(b, h, s, x) * in_.d_o.at(b, h, s, x);
    return l;
  }

 private:
  Case c_;
  BwdInputs& in_;
  dg::Handle handle_{dg::Device::cpu()};
  dg::Graph g_;
  sdpa_test::SdpaTensors t_;
  Tensor4 o_, stats_;
  bool ok_ = false;
};

// dL/dx for every element of x (one of the forward's inputs) by central differences.
Tensor4 numeric_grad(ForwardLoss& f, Tensor4& x) {
  constexpr double kStep = 1e-2;
  Tensor4 grad = x;
  for (int64_t i = 0; i < x.count(); ++i) {
    const double x0 = dg::dtype::load(x.bytes.data(), x.type, i);
    dg::dtype::store(x.bytes.data(), x.type, i, x0 + kStep);
    const double up = f.loss();
    dg::dtype::store(x.bytes.data(), x.type, i, x0 - kStep);
    const double down = f.loss();
    dg::dtype::store(x.bytes.data(), x.type, i, x0);
    dg::dtype::store(grad.bytes.data(), grad.type, i, (up - down) / (2 * kStep));
  }
  return grad;
}

void check_against_finite_differences(const Case& c, uint32_t seed) {
  BwdInputs in = sdpa_test::make_backward_inputs(c, seed);
  const Grads got = sdpa_test::run_backward_on_cpu(c, in, "ref");
  ForwardLoss f(c, in);
  ASSERT_TRUE(f.ok());
  Grads want{numeric_grad(f, in.fwd.q), numeric_grad(f, in.fwd.k), numeric_grad(f, in.fwd.v), "finite differences"};
  sdpa_test::expect_grads_close(c, got, want, 2e-3);
}

}  // namespace

TEST(RefSdpaBackward, MatchesFiniteDifferencesOnRandomShapes) {
  const int64_t head_dims[] = {1, 3, 4, 8};
  auto vary = [&](test_random::IntPicker& pick, int trial, Case& c) {
    c.d = head_dims[pick(0, 3)];
    c.dv = trial % 3 == 0 ? head_dims[pick(0, 3)] : c.d;
    c.bshd = trial % 2 == 1;
    sdpa_test::pick_mask_and_bounds(pick, c, trial, 4, 3);
    c.padding = trial % 4 == 3;
    if (trial % 5 == 4) c.scale = 0.3;
  };
  sdpa_test::for_each_random_case<Case>(77, 20, 7, 9, vary, [](const Case& c, int trial) {
    check_against_finite_differences(c, static_cast<uint32_t>(trial + 1));
  });
}

TEST(RefSdpaBackward, PaddedAndFullyMaskedRowsGiveZeroGradients) {
  Case c;
  c.h = 2;
  c.hk = 1;
  c.d = c.dv = 4;
  const sdpa_test::Inputs fwd = sdpa_test::fully_masked_inputs(c, 34);  // bottom-right causal, 30 keys
  BwdInputs in;
  in.fwd = fwd;
  sdpa_test::forward_on_ref(c, in.fwd, in.o, in.stats);
  in.d_o = Tensor4({c.b, c.h, c.sq, c.dv}, c.type, c.bshd);
  std::mt19937 rng(3);
  in.d_o.fill_random(rng);
  const Grads got = sdpa_test::run_backward_on_cpu(c, in, "ref");
  for (int64_t s = 0; s < c.sq - c.skv; ++s) EXPECT_EQ(got.dq.at(0, 1, s, 2), 0.0) << "row " << s << " sees no key";
  EXPECT_EQ(got.dq.at(1, 0, 5, 1), 0.0);  // batch 1 has no query rows
  EXPECT_EQ(got.dk.at(1, 0, 3, 0), 0.0);  // ... so its keys get nothing
  EXPECT_EQ(got.dk.at(0, 0, 3, 0) != 0.0, true);
  EXPECT_EQ(got.dv.at(2, 0, 4, 3), 0.0);  // batch 2 has no keys
  EXPECT_EQ(got.dv.at(1, 0, 20, 3), 0.0);  // keys past batch 1's 12
}
