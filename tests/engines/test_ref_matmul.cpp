// The reference matmul, run through the public API, against a naive loop written here: batched
// with broadcast batch dims, row- and column-major operands and outputs, fp32/bf16/fp16; and a
// matmul -> scale(alpha) -> bias -> GELU graph with an AMAX reduction output.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using dg::DataType;

namespace {

using Dims = std::vector<int64_t>;

int64_t volume(const Dims& d) {
  int64_t v = 1;
  for (int64_t x : d) v *= x;
  return v;
}
Dims packed(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}
// Packed strides with the last two dims swapped in memory: each matrix column-major.
Dims column_major(const Dims& d) {
  const size_t r = d.size();
  Dims s(r);
  s[r - 2] = 1;
  s[r - 1] = d[r - 2];
  int64_t run = d[r - 2] * d[r - 1];
  for (size_t i = r - 2; i-- > 0;) {
    s[i] = run;
    run *= d[i];
  }
  return s;
}
Dims unravel(int64_t lin, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = lin % dims[i];
    lin /= dims[i];
  }
  return idx;
}
std::string to_str(const Dims& d) {
  std::string r = "[";
  for (size_t i = 0; i < d.size(); ++i) r += (i ? "," : "") + std::to_string(d[i]);
  return r + "]";
}

// A strided host buffer of any float dtype, poisoned with NaN; values() reads it row-major.
struct HostTensor {
  DataType dtype;
  Dims dims, strides;
  int64_t span = 1;
  std::vector<unsigned char> bytes;

  HostTensor(DataType t, Dims d, Dims s) : dtype(t), dims(std::move(d)), strides(std::move(s)) {
    for (size_t i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * strides[i];
    bytes.assign(static_cast<size_t>(span * dg::size_of(t)), 0);
    for (int64_t i = 0; i < span; ++i) dg::dtype::store(data(), dtype, i, std::nan(""));
  }
  void* data() { return bytes.data(); }
  int64_t offset(const Dims& idx) const {
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * strides[i];
    return o;
  }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(volume(dims)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = dg::dtype::load(bytes.data(), dtype, offset(unravel(static_cast<int64_t>(i), dims)));
    return v;
  }
  std::vector<double> randomize(std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t i = 0; i < volume(dims); ++i) dg::dtype::store(data(), dtype, offset(unravel(i, dims)), u(rng));
    return values();
  }
};

double tolerance_of(DataType t) {
  switch (t) {
    case DataType::BFLOAT16: return 1e-2;
    case DataType::HALF: return 3e-3;
    default: return 1e-5;
  }
}

// The five build steps and execute, on the CPU, with the ref engine only.
dg::Status build_and_run(dg::Graph& g, const dg::VariantPack& pack) {
  dg::Handle handle(dg::Device::cpu());
  g.select_engines({"ref"});
  if (auto s = g.validate(); !s.ok()) return s;
  if (auto s = g.build_operation_graph(handle); !s.ok()) return s;
  if (auto s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); !s.ok()) return s;
  if (auto s = g.check_support(handle); !s.ok()) return s;
  if (auto s = g.build_plans(handle); !s.ok()) return s;
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  std::vector<unsigned char> workspace(static_cast<size_t>(ws) + 1);
  return g.execute(handle, pack, workspace.data(), ws);
}

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
    st = build_and_run(g, {{A, ha.data()}, {B, hb.data()}, {C, hc.data()}});
    ASSERT_TRUE(st.ok()) << st.to_string();
    std::vector<double> want, mag;
    naive_matmul(s, a, b, want, mag);
    const auto got = hc.values();
    const double rtol = tolerance_of(s.dtype);
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
    st = build_and_run(g, {{A, ha.data()}, {B, hb.data()}, {bias, hbias.data()}, {G, hg.data()}, {amax, hamax.data()}});
    ASSERT_TRUE(st.ok()) << st.to_string();
    MatmulShape s;
    s.a = ad;
    s.b = bd;
    s.c = {2, 12, 9};
    std::vector<double> c, mag;
    naive_matmul(s, a, b, c, mag);
    const auto got = hg.values();
    const double rtol = tolerance_of(io);
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
