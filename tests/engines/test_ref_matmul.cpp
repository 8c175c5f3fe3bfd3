// The reference matmul, run through the public API, against a naive loop written here: batched
// with broadcast batch dims, row- and column-major operands and outputs, fp32/bf16/fp16; and a
// matmul -> scale(alpha) -> bias -> GELU graph with an AMAX reduction output.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "engines/ref_test_util.hpp"

namespace dg = dnngraph;
using dg::DataType;

namespace {

using namespace ref_test;
using test_dims::column_major;
using test_dims::packed;
using test_dims::to_str;
using test_dims::unravel;

struct MatmulShape {
  Dims a, b, c;  // A [..., M, K], B [..., K, N], C [..., M, N]
  bool a_col = false, b_col = false, c_col = false;
  DataType dtype = DataType::FLOAT;
  std::string describe() const {
    return "A" + to_str(a) + (a_col ? "col" : "row") + " B" + to_str(b) + (b_col ? "col" : "row") + " C" +
           (c_col ? "col " : "row ") + std::string(dg::to_string(dtype));
  }
};

MatmulShape random_shape(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (;;) {
    MatmulShape s;
    const int64_t batch_rank = pick(0, 2);
    for (int64_t i = 0; i < batch_rank; ++i) {
      const int64_t d = pick(1, 3);
      const int64_t mode = pick(0, 2);  // 0: both d, 1: A broadcasts, 2: B broadcasts
      s.a.push_back(mode == 1 ? 1 : d);
      s.b.push_back(mode == 2 ? 1 : d);
      s.c.push_back(d);
    }
    const int64_t m = pick(1, 24), n = pick(1, 24), k = pick(1, 40);
    s.a.insert(s.a.end(), {m, k});
    s.b.insert(s.b.end(), {k, n});
    s.c.insert(s.c.end(), {m, n});
    s.a_col = pick(0, 1) == 1;
    s.b_col = pick(0, 1) == 1;
    s.c_col = pick(0, 3) == 0;
    s.dtype = std::array{DataType::FLOAT, DataType::BFLOAT16, DataType::HALF}[static_cast<size_t>(pick(0, 2))];
    if (volume(s.c) * k <= 40000) return s;
  }
}

// C = A x B on row-major doubles with numpy batch broadcasting; also sum |a * b| per element.
void naive_matmul(const MatmulShape& s, const std::vector<double>& a, const std::vector<double>& b,
                  std::vector<double>& c, std::vector<double>& abs_sum) {
  const size_t r = s.c.size();
  const int64_t m_total = s.c[r - 2], n_total = s.c[r - 1], k_total = s.a[r - 1];
  const Dims batch(s.c.begin(), s.c.end() - 2);
  c.assign(static_cast<size_t>(volume(s.c)), 0.0);
  abs_sum = c;
  for (int64_t bi = 0; bi < volume(batch); ++bi) {
    const Dims bidx = unravel(bi, batch);
    int64_t a_batch = 0, b_batch = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      a_batch = a_batch * s.a[i] + (s.a[i] == 1 ? 0 : bidx[i]);
      b_batch = b_batch * s.b[i] + (s.b[i] == 1 ? 0 : bidx[i]);
    }
    for (int64_t m = 0; m < m_total; ++m)
      for (int64_t n = 0; n < n_total; ++n) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < k_total; ++k) {
          const double p = a[static_cast<size_t>((a_batch * m_total + m) * k_total + k)] *
                           b[static_cast<size_t>((b_batch * k_total + k) * n_total + n)];
          acc += p;
          mag += std::fabs(p);
        }
        const size_t ci = static_cast<size_t>((bi * m_total + m) * n_total + n);
        c[ci] = acc;
        abs_sum[ci] = mag;
      }
  }
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

TEST(RefMatmul, MatchesNaiveLoop) {
  std::mt19937 rng(5);
  for (int iter = 0; iter < 40; ++iter) {
    const MatmulShape s = random_shape(rng);
    SCOPED_TRACE(s.describe());
    dg::Graph g;
    g.set_io_data_type(s.dtype).set_compute_data_type(DataType::FLOAT);
    auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(s.a).set_stride(s.a_col ? column_major(s.a) : packed(s.a)));
    auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(s.b).set_stride(s.b_col ? column_major(s.b) : packed(s.b)));
    auto C = g.matmul(A, B, dg::MatmulAttr());
    C->set_output(true);
    if (s.c_col) C->set_stride(column_major(s.c));
    auto st = g.validate();
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(C->get_dim(), s.c);
    HostTensor ha(s.dtype, s.a, A->get_stride()), hb(s.dtype, s.b, B->get_stride());
    HostTensor hc(C->get_data_type(), C->get_dim(), C->get_stride());
    const auto a = ha.randomize(rng), b = hb.randomize(rng);
    st = run_on_ref(g, {{A, ha.data()}, {B, hb.data()}, {C, hc.data()}});
    ASSERT_TRUE(st.ok()) << st.to_string();
    std::vector<double> want, mag;
    naive_matmul(s, a, b, want, mag);
    const auto got = hc.values();
    const double rtol = tolerance(s.dtype);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], rtol * std::fabs(want[i]) + rtol * 1e-3 * mag[i] + 1e-30) << "element " << i;
  }
}

// matmul -> scale(0.125, pass by value) -> bias -> GELU, with AMAX of the GELU output as a second output.
TEST(RefMatmul, ScaleBiasGeluAmaxGraph) {
  std::mt19937 rng(17);
  for (DataType io : {DataType::FLOAT, DataType::BFLOAT16, DataType::HALF}) {
    const Dims ad = {2, 12, 20}, bd = {1, 20, 9}, biasd = {1, 1, 9};
    SCOPED_TRACE(std::string(dg::to_string(io)));
    dg::Graph g;
    g.set_io_data_type(io).set_intermediate_data_type(DataType::FLOAT).set_compute_data_type(DataType::FLOAT);
    auto A = g.tensor(dg::TensorAttr().set_name("A").set_dim(ad).set_stride(packed(ad)));
    auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(column_major(bd)));
    auto bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim(biasd).set_stride(packed(biasd)));
    // A pass-by-value scalar of C's rank: g.tensor(0.125) has rank 1, which pointwise does not
    // broadcast against rank 3 yet.
    auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_data_type(DataType::FLOAT).set_dim({1, 1, 1})
                              .set_stride({1, 1, 1}).set_value(0.125));
    auto G = g.gelu(g.bias(g.scale(g.matmul(A, B, dg::MatmulAttr()), alpha), bias));
    G->set_output(true);
    auto amax = g.reduction(G, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
    amax->set_output(true).set_data_type(DataType::FLOAT);
    auto st = g.validate();
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(amax->get_dim(), (Dims{1, 1, 1}));
    HostTensor ha(io, ad, A->get_stride()), hb(io, bd, B->get_stride()), hbias(io, biasd, bias->get_stride());
    HostTensor hg(io, G->get_dim(), G->get_stride()), hamax(DataType::FLOAT, {1, 1, 1}, {1, 1, 1});
    const auto a = ha.randomize(rng), b = hb.randomize(rng), bv = hbias.randomize(rng);
    st = run_on_ref(g, {{A, ha.data()}, {B, hb.data()}, {bias, hbias.data()}, {G, hg.data()}, {amax, hamax.data()}});
    ASSERT_TRUE(st.ok()) << st.to_string();
    MatmulShape s;
    s.a = ad;
    s.b = bd;
    s.c = {2, 12, 9};
    std::vector<double> c, mag;
    naive_matmul(s, a, b, c, mag);
    const auto got = hg.values();
    const double rtol = tolerance(io);
    double want_amax = 0;
    auto f32 = [](double v) { return dg::dtype::round_to(DataType::FLOAT, v); };
    for (size_t i = 0; i < c.size(); ++i) {
      const double z = f32(f32(f32(c[i]) * 0.125) + bv[i % 9]);
      const double want = dg::dtype::round_to(io, gelu(z));
      want_amax = std::max(want_amax, std::fabs(want));
      ASSERT_NEAR(got[i], want, rtol * std::fabs(want) + 1e-6) << "element " << i;
    }
    EXPECT_NEAR(hamax.values()[0], want_amax, rtol * want_amax);
  }
}
