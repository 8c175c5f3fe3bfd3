// The reference convolutions, run through the public API: fprop against an im2col + GEMM written
// here, dgrad and wgrad by the adjoint identities <fprop(x, w), dy> = <x, dgrad(dy, w)> =
// <w, wgrad(dy, x)>, and a conv -> bias -> ReLU graph. Random shapes: 1D/2D/3D, groups (incl.
// depthwise), stride, dilation, asymmetric padding, NCHW-like and channels-last strides, fp32/bf16/fp16.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "engines/ref_test_util.hpp"

namespace dg = dnngraph;
using dg::DataType;

namespace {

using namespace ref_test;
using test_dims::packed;
using test_dims::unravel;

// One random convolution problem.
struct ConvShape {
  int64_t n = 1, groups = 1, c_per_group = 1, k_per_group = 1;
  Dims x_sp, k_sp, y_sp, pre, post, stride, dilation;
  bool channels_last = false;
  DataType dtype = DataType::FLOAT;

  Dims x_dims() const { return cat({n, groups * c_per_group}, x_sp); }
  Dims w_dims() const { return cat({groups * k_per_group, c_per_group}, k_sp); }
  Dims y_dims() const { return cat({n, groups * k_per_group}, y_sp); }
  Dims strides(const Dims& d) const { return channels_last ? test_dims::channels_last(d) : packed(d); }
  int64_t macs() const { return volume(y_dims()) * c_per_group * volume(k_sp); }
  // Whether dgrad's inference gives X's dims (groups 1, no stride remainder).
  bool dx_dims_inferable() const {
    bool inferred = groups == 1;
    for (size_t i = 0; i < x_sp.size(); ++i)
      inferred = inferred && (y_sp[i] - 1) * stride[i] - pre[i] - post[i] + dilation[i] * (k_sp[i] - 1) + 1 == x_sp[i];
    return inferred;
  }
  // Whether wgrad's inference finds W's kernel (groups 1, the largest kernel).
  bool dw_dims_inferable() const {
    bool inferred = groups == 1;
    for (size_t i = 0; i < x_sp.size(); ++i) {
      const int64_t room = x_sp[i] + pre[i] + post[i] - 1 - (y_sp[i] - 1) * stride[i];
      inferred = inferred && room / dilation[i] + 1 == k_sp[i];
    }
    return inferred;
  }
  template <class Attr>
  Attr attr() const {
    Attr a;
    a.set_pre_padding(pre).set_post_padding(post).set_stride(stride).set_dilation(dilation);
    return a;
  }
  static Dims cat(Dims a, const Dims& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::string describe() const {
    using test_dims::to_str;
    return "x" + to_str(x_dims()) + " w" + to_str(w_dims()) + " pre" + to_str(pre) + " post" + to_str(post) +
           " stride" + to_str(stride) + " dil" + to_str(dilation) + (channels_last ? " channels-last " : " packed ") +
           std::string(dg::to_string(dtype));
  }
};

ConvShape random_shape(std::mt19937& rng, int nsp) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (;;) {
    ConvShape s;
    s.n = pick(1, 2);
    switch (pick(0, 3)) {
      case 0: s.groups = 1; s.c_per_group = pick(1, 4); s.k_per_group = pick(1, 4); break;
      case 1: s.groups = pick(2, 3); s.c_per_group = pick(1, 3); s.k_per_group = pick(1, 3); break;
      case 2: s.groups = pick(2, 5); s.c_per_group = 1; s.k_per_group = 1; break;  // depthwise
      default: s.groups = pick(2, 4); s.c_per_group = 1; s.k_per_group = 2; break;  // depthwise, multiplier 2
    }
    const int64_t max_k = nsp == 3 ? 2 : 3;
    for (int i = 0; i < nsp; ++i) {
      const int64_t k = pick(1, max_k), dil = pick(1, 2), st = pick(1, 2);
      const int64_t pre = pick(0, 2), post = pick(0, 2);
      const int64_t extent = dil * (k - 1) + 1;
      const int64_t x = pick(std::max<int64_t>(1, extent - pre - post), extent + (nsp == 3 ? 3 : 7));
      s.k_sp.push_back(k);
      s.dilation.push_back(dil);
      s.stride.push_back(st);
      s.pre.push_back(pre);
      s.post.push_back(post);
      s.x_sp.push_back(x);
      s.y_sp.push_back((x + pre + post - extent) / st + 1);
    }
    s.channels_last = pick(0, 1) == 1;
    s.dtype = std::array{DataType::FLOAT, DataType::BFLOAT16, DataType::HALF}[static_cast<size_t>(pick(0, 2))];
    if (s.macs() <= 60000) return s;
  }
}

// Calls fn on `per_rank` random shapes of each spatial rank 1, 2, 3, drawn from rng in that order;
// stops at the first fatal failure.
void for_random_shapes(std::mt19937& rng, int per_rank, const std::function<void(const ConvShape&)>& fn) {
  for (int nsp = 1; nsp <= 3; ++nsp) {
    for (int iter = 0; iter < per_rank; ++iter) {
      const ConvShape s = random_shape(rng, nsp);
      SCOPED_TRACE(s.describe());
      fn(s);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Y = conv(X, W) by im2col per (n, group) and a naive GEMM, on row-major doubles.
std::vector<double> im2col_fprop(const ConvShape& s, const std::vector<double>& x, const std::vector<double>& w) {
  const Dims xd = s.x_dims(), yd = s.y_dims();
  const int64_t kvol = volume(s.k_sp), ovol = volume(s.y_sp), rows = s.c_per_group * kvol;
  std::vector<double> y(static_cast<size_t>(volume(yd)), 0.0);
  std::vector<double> col(static_cast<size_t>(rows * ovol));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t g = 0; g < s.groups; ++g) {
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t c = g * s.c_per_group + row / kvol;
        const Dims r = unravel(row % kvol, s.k_sp);
        for (int64_t o = 0; o < ovol; ++o) {
          const Dims op = unravel(o, s.y_sp);
          Dims idx = {n, c};
          bool inside = true;
          for (size_t i = 0; i < op.size(); ++i) {
            const int64_t p = op[i] * s.stride[i] - s.pre[i] + r[i] * s.dilation[i];
            inside = inside && p >= 0 && p < s.x_sp[i];
            idx.push_back(p);
          }
          int64_t lin = 0;
          for (size_t i = 0; inside && i < idx.size(); ++i) lin = lin * xd[i] + idx[i];
          col[static_cast<size_t>(row * ovol + o)] = inside ? x[static_cast<size_t>(lin)] : 0.0;
        }
      }
      for (int64_t kk = 0; kk < s.k_per_group; ++kk) {
        const int64_t k = g * s.k_per_group + kk;
        for (int64_t o = 0; o < ovol; ++o) {
          double acc = 0.0;
          for (int64_t row = 0; row < rows; ++row)
            acc += w[static_cast<size_t>(k * rows + row)] * col[static_cast<size_t>(row * ovol + o)];
          y[static_cast<size_t>((n * yd[1] + k) * ovol + o)] = acc;
        }
      }
    }
  }
  return y;
}

struct FpropResult {
  std::vector<double> x, w, y;
};

// Runs conv_fprop on random X and W; Y has the given type (NOT_SET: the io type, s.dtype).
FpropResult run_fprop(const ConvShape& s, std::mt19937& rng, DataType y_type = DataType::NOT_SET) {
  dg::Graph g;
  g.set_io_data_type(s.dtype).set_intermediate_data_type(DataType::FLOAT).set_compute_data_type(DataType::FLOAT);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(s.x_dims()).set_stride(s.strides(s.x_dims())));
  auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(s.w_dims()).set_stride(s.strides(s.w_dims())));
  auto Y = g.conv_fprop(X, W, s.attr<dg::ConvFpropAttr>());
  Y->set_output(true).set_data_type(y_type);
  auto st = g.validate();
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(Y->get_dim(), s.y_dims());
  // Y follows X's layout; a size-1 dim of X ties strides and leaves the order open.
  const Dims xd = s.x_dims();
  if (std::all_of(xd.begin() + 1, xd.end(), [](int64_t d) { return d > 1; })) {
    EXPECT_EQ(Y->get_stride(), s.strides(s.y_dims()));
  }
  HostTensor hx(s.dtype, s.x_dims(), X->get_stride()), hw(s.dtype, s.w_dims(), W->get_stride());
  HostTensor hy(Y->get_data_type(), Y->get_dim(), Y->get_stride());
  FpropResult r{hx.randomize(rng), hw.randomize(rng), {}};
  st = run_on_ref(g, {{X, hx.data()}, {W, hw.data()}, {Y, hy.data()}});
  EXPECT_TRUE(st.ok()) << st.to_string();
  r.y = hy.values();
  return r;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
double abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] * b[i]);
  return s;
}

// One backward convolution checked by its adjoint identity against a forward run f of the same
// shape: dgrad(DY, W) -> DX with <Y, DY> = <X, DX>, wgrad(DY, X) -> DW with <Y, DY> = <W, DW>.
struct AdjointCase {
  const char* operand;  // the input next to DY: "W" (dgrad) or "X" (wgrad)
  const char* result;   // "DX" or "DW"
  Dims operand_dims, result_dims;
  const std::vector<double>* operand_values;  // the forward run's W or X, reused
  const std::vector<double>* paired_values;   // the forward run's X or W, dotted with the result
  std::function<dg::TensorPtr(dg::Graph&, const dg::TensorPtr&, const dg::TensorPtr&)> op;
  bool result_dims_inferred;  // else the result's dims are set by hand
};

void expect_adjoint(const ConvShape& s, const FpropResult& f, const AdjointCase& c, std::mt19937& rng) {
  dg::Graph g;
  g.set_io_data_type(s.dtype).set_compute_data_type(DataType::FLOAT);
  auto DY = g.tensor(dg::TensorAttr().set_name("DY").set_dim(s.y_dims()).set_stride(s.strides(s.y_dims())));
  auto O = g.tensor(dg::TensorAttr().set_name(c.operand).set_dim(c.operand_dims).set_stride(s.strides(c.operand_dims)));
  auto R = c.op(g, DY, O);
  R->set_output(true).set_data_type(DataType::FLOAT);
  if (!c.result_dims_inferred) R->set_dim(c.result_dims);
  auto st = g.validate();
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(R->get_dim(), c.result_dims);
  HostTensor hdy(s.dtype, s.y_dims(), DY->get_stride()), ho(s.dtype, c.operand_dims, O->get_stride());
  HostTensor hr(DataType::FLOAT, R->get_dim(), R->get_stride());
  const std::vector<double> dy = hdy.randomize(rng);
  ho.assign(*c.operand_values);
  st = run_on_ref(g, {{DY, hdy.data()}, {O, ho.data()}, {R, hr.data()}});
  ASSERT_TRUE(st.ok()) << st.to_string();
  const std::vector<double> r = hr.values();
  for (double v : r) ASSERT_FALSE(std::isnan(v)) << "an element of " << c.result << " was not written";
  const double lhs = dot(f.y, dy), rhs = dot(*c.paired_values, r);
  EXPECT_NEAR(lhs, rhs, 1e-5 * (abs_dot(f.y, dy) + abs_dot(*c.paired_values, r)) + 1e-12)
      << c.result << (c.result_dims_inferred ? " dims inferred" : " dims set");
}

AdjointCase dgrad_case(const ConvShape& s, const FpropResult& f) {
  auto dgrad = [&s](dg::Graph& g, const dg::TensorPtr& dy, const dg::TensorPtr& w) {
    return g.conv_dgrad(dy, w, s.attr<dg::ConvDgradAttr>());
  };
  return {"W", "DX", s.w_dims(), s.x_dims(), &f.w, &f.x, dgrad, s.dx_dims_inferable()};
}

AdjointCase wgrad_case(const ConvShape& s, const FpropResult& f) {
  auto wgrad = [&s](dg::Graph& g, const dg::TensorPtr& dy, const dg::TensorPtr& x) {
    return g.conv_wgrad(dy, x, s.attr<dg::ConvWgradAttr>());
  };
  return {"X", "DW", s.x_dims(), s.w_dims(), &f.x, &f.w, wgrad, s.dw_dims_inferable()};
}

// 8 random shapes of each spatial rank from `seed`: a forward run, then the backward case made by
// make_case, checked by its adjoint identity.
void expect_adjoint_on_random_shapes(uint32_t seed, AdjointCase (*make_case)(const ConvShape&, const FpropResult&)) {
  std::mt19937 rng(seed);
  for_random_shapes(rng, 8, [&](const ConvShape& s) {
    const FpropResult f = run_fprop(s, rng, DataType::FLOAT);
    expect_adjoint(s, f, make_case(s, f), rng);
  });
}

}  // namespace

TEST(RefConv, FpropMatchesIm2colGemm) {
  std::mt19937 rng(2024);
  for_random_shapes(rng, 12, [&](const ConvShape& s) {
    const FpropResult r = run_fprop(s, rng);
    const std::vector<double> want = im2col_fprop(s, r.x, r.w);
    const std::vector<double> scale =
        im2col_fprop(s, std::vector<double>(r.x.size(), 1.0), std::vector<double>(r.w.size(), 1.0));
    const double rtol = tolerance(s.dtype);
    ASSERT_EQ(r.y.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(r.y[i], want[i], rtol * std::fabs(want[i]) + rtol * 1e-3 * scale[i] + 1e-30) << "element " << i;
  });
}

TEST(RefConv, DgradIsTheAdjointOfFprop) { expect_adjoint_on_random_shapes(7, dgrad_case); }

TEST(RefConv, WgradIsTheAdjointOfFprop) { expect_adjoint_on_random_shapes(11, wgrad_case); }

// conv -> bias -> ReLU as one graph, against im2col + bias + max(0, .) with the intermediate rounding.
TEST(RefConv, ConvBiasReluGraph) {
  std::mt19937 rng(99);
  for (DataType io : {DataType::FLOAT, DataType::BFLOAT16}) {
    for (int iter = 0; iter < 4; ++iter) {
      ConvShape s = random_shape(rng, 2);
      s.dtype = io;
      SCOPED_TRACE(s.describe());
      dg::Graph g;
      g.set_io_data_type(io).set_intermediate_data_type(DataType::FLOAT).set_compute_data_type(DataType::FLOAT);
      auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(s.x_dims()).set_stride(s.strides(s.x_dims())));
      auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(s.w_dims()).set_stride(s.strides(s.w_dims())));
      const Dims bd = {1, s.groups * s.k_per_group, 1, 1};
      auto B = g.tensor(dg::TensorAttr().set_name("B").set_dim(bd).set_stride(packed(bd)));
      auto R = g.relu(g.bias(g.conv_fprop(X, W, s.attr<dg::ConvFpropAttr>()), B));
      R->set_output(true);
      auto st = g.validate();
      ASSERT_TRUE(st.ok()) << st.to_string();
      HostTensor hx(io, s.x_dims(), X->get_stride()), hw(io, s.w_dims(), W->get_stride());
      HostTensor hb(io, bd, B->get_stride()), hr(io, R->get_dim(), R->get_stride());
      const auto x = hx.randomize(rng), w = hw.randomize(rng), b = hb.randomize(rng);
      st = run_on_ref(g, {{X, hx.data()}, {W, hw.data()}, {B, hb.data()}, {R, hr.data()}});
      ASSERT_TRUE(st.ok()) << st.to_string();
      const auto got = hr.values();
      const auto y = im2col_fprop(s, x, w);
      const int64_t ovol = volume(s.y_sp), k_total = s.groups * s.k_per_group;
      const double rtol = tolerance(io);
      for (size_t i = 0; i < y.size(); ++i) {
        const double conv = dg::dtype::round_to(DataType::FLOAT, y[i]);
        const double biased = dg::dtype::round_to(DataType::FLOAT, conv + b[(i / ovol) % k_total]);
        const double want = std::max(0.0, biased);
        ASSERT_NEAR(got[i], want, rtol * std::fabs(want) + 1e-6) << "element " << i;
      }
    }
  }
}
