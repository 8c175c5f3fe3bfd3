// The reference convolutions, run through the public API: fprop against an im2col + GEMM written
// here, dgrad and wgrad by the adjoint identities <fprop(x, w), dy> = <x, dgrad(dy, w)> =
// <w, wgrad(dy, x)>, and a conv -> bias -> ReLU graph. Random shapes: 1D/2D/3D, groups (incl.
// depthwise), stride, dilation, asymmetric padding, NCHW-like and channels-last strides, fp32/bf16/fp16.
#include <gtest/gtest.h>

#include <algorithm>
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
// Channels innermost, then the spatial dims, then N (NHWC for rank 4).
Dims channels_last(const Dims& d) {
  Dims s(d.size());
  int64_t run = 1;
  s[1] = run;
  run *= d[1];
  for (size_t i = d.size(); i-- > 2;) {
    s[i] = run;
    run *= d[i];
  }
  s[0] = run;
  return s;
}
// Row-major multi-index of linear index `lin`.
Dims unravel(int64_t lin, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = lin % dims[i];
    lin /= dims[i];
  }
  return idx;
}

// A strided host buffer of any dtype; values() / assign() convert to and from row-major doubles.
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
  // Stores random values in [-1, 1) and returns them as stored (rounded to the dtype).
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

// One random convolution problem.
struct ConvShape {
  int64_t n = 1, groups = 1, c_per_group = 1, k_per_group = 1;
  Dims x_sp, k_sp, y_sp, pre, post, stride, dilation;
  bool channels_last = false;
  DataType dtype = DataType::FLOAT;

  Dims x_dims() const { return cat({n, groups * c_per_group}, x_sp); }
  Dims w_dims() const { return cat({groups * k_per_group, c_per_group}, k_sp); }
  Dims y_dims() const { return cat({n, groups * k_per_group}, y_sp); }
  Dims strides(const Dims& d) const { return channels_last ? ::channels_last(d) : packed(d); }
  int64_t macs() const { return volume(y_dims()) * c_per_group * volume(k_sp); }
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
    auto s = [](const Dims& d) {
      std::string r = "[";
      for (size_t i = 0; i < d.size(); ++i) r += (i ? "," : "") + std::to_string(d[i]);
      return r + "]";
    };
    return "x" + s(x_dims()) + " w" + s(w_dims()) + " pre" + s(pre) + " post" + s(post) + " stride" + s(stride) +
           " dil" + s(dilation) + (channels_last ? " channels-last " : " packed ") +
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
  st = build_and_run(g, {{X, hx.data()}, {W, hw.data()}, {Y, hy.data()}});
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

}  // namespace

TEST(RefConv, FpropMatchesIm2colGemm) {
  std::mt19937 rng(2024);
  for (int nsp = 1; nsp <= 3; ++nsp) {
    for (int iter = 0; iter < 12; ++iter) {
      const ConvShape s = random_shape(rng, nsp);
      SCOPED_TRACE(s.describe());
      const FpropResult r = run_fprop(s, rng);
      const std::vector<double> want = im2col_fprop(s, r.x, r.w);
      const std::vector<double> scale = im2col_fprop(s, std::vector<double>(r.x.size(), 1.0),
                                                     std::vector<double>(r.w.size(), 1.0));
      const double rtol = tolerance_of(s.dtype);
      ASSERT_EQ(r.y.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(r.y[i], want[i], rtol * std::fabs(want[i]) + rtol * 1e-3 * scale[i] + 1e-30) << "element " << i;
    }
  }
}

TEST(RefConv, DgradIsTheAdjointOfFprop) {
  std::mt19937 rng(7);
  for (int nsp = 1; nsp <= 3; ++nsp) {
    for (int iter = 0; iter < 8; ++iter) {
      const ConvShape s = random_shape(rng, nsp);
      SCOPED_TRACE(s.describe());
      const FpropResult f = run_fprop(s, rng, DataType::FLOAT);
      dg::Graph g;
      g.set_io_data_type(s.dtype).set_compute_data_type(DataType::FLOAT);
      auto DY = g.tensor(dg::TensorAttr().set_name("DY").set_dim(s.y_dims()).set_stride(s.strides(s.y_dims())));
      auto W = g.tensor(dg::TensorAttr().set_name("W").set_dim(s.w_dims()).set_stride(s.strides(s.w_dims())));
      auto DX = g.conv_dgrad(DY, W, s.attr<dg::ConvDgradAttr>());
      DX->set_output(true).set_data_type(DataType::FLOAT);
      // Leave DX's dims to inference where it gives X's (groups 1, no stride remainder).
      bool inferred = s.groups == 1;
      for (size_t i = 0; i < s.x_sp.size(); ++i)
        inferred = inferred && (s.y_sp[i] - 1) * s.stride[i] - s.pre[i] - s.post[i] +
                                       s.dilation[i] * (s.k_sp[i] - 1) + 1 == s.x_sp[i];
      if (!inferred) DX->set_dim(s.x_dims());
      auto st = g.validate();
      ASSERT_TRUE(st.ok()) << st.to_string();
      ASSERT_EQ(DX->get_dim(), s.x_dims());
      HostTensor hdy(s.dtype, s.y_dims(), DY->get_stride()), hw(s.dtype, s.w_dims(), W->get_stride());
      HostTensor hdx(DataType::FLOAT, DX->get_dim(), DX->get_stride());
      const std::vector<double> dy = hdy.randomize(rng);
      // The same W as the forward run.
      for (int64_t i = 0; i < volume(s.w_dims()); ++i)
        dg::dtype::store(hw.data(), s.dtype, hw.offset(unravel(i, s.w_dims())), f.w[static_cast<size_t>(i)]);
      st = build_and_run(g, {{DY, hdy.data()}, {W, hw.data()}, {DX, hdx.data()}});
      ASSERT_TRUE(st.ok()) << st.to_string();
      const std::vector<double> dx = hdx.values();
      for (double v : dx) ASSERT_FALSE(std::isnan(v)) << "an element of DX was not written";
      const double lhs = dot(f.y, dy), rhs = dot(f.x, dx);
      EXPECT_NEAR(lhs, rhs, 1e-5 * (abs_dot(f.y, dy) + abs_dot(f.x, dx)) + 1e-12)
          << (inferred ? "DX dims inferred" : "DX dims set");
    }
  }
}

TEST(RefConv, WgradIsTheAdjointOfFprop) {
  std::mt19937 rng(11);
  for (int nsp = 1; nsp <= 3; ++nsp) {
    for (int iter = 0; iter < 8; ++iter) {
      const ConvShape s = random_shape(rng, nsp);
      SCOPED_TRACE(s.describe());
      const FpropResult f = run_fprop(s, rng, DataType::FLOAT);
      dg::Graph g;
      g.set_io_data_type(s.dtype).set_compute_data_type(DataType::FLOAT);
      auto DY = g.tensor(dg::TensorAttr().set_name("DY").set_dim(s.y_dims()).set_stride(s.strides(s.y_dims())));
      auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim(s.x_dims()).set_stride(s.strides(s.x_dims())));
      auto DW = g.conv_wgrad(DY, X, s.attr<dg::ConvWgradAttr>());
      DW->set_output(true).set_data_type(DataType::FLOAT);
      // Leave DW's dims to inference where it finds the kernel (groups 1, the largest kernel).
      bool inferred = s.groups == 1;
      for (size_t i = 0; i < s.x_sp.size(); ++i) {
        const int64_t room = s.x_sp[i] + s.pre[i] + s.post[i] - 1 - (s.y_sp[i] - 1) * s.stride[i];
        inferred = inferred && room / s.dilation[i] + 1 == s.k_sp[i];
      }
      if (!inferred) DW->set_dim(s.w_dims());
      auto st = g.validate();
      ASSERT_TRUE(st.ok()) << st.to_string();
      ASSERT_EQ(DW->get_dim(), s.w_dims());
      HostTensor hdy(s.dtype, s.y_dims(), DY->get_stride()), hx(s.dtype, s.x_dims(), X->get_stride());
      HostTensor hdw(DataType::FLOAT, DW->get_dim(), DW->get_stride());
      const std::vector<double> dy = hdy.randomize(rng);
      for (int64_t i = 0; i < volume(s.x_dims()); ++i)
        dg::dtype::store(hx.data(), s.dtype, hx.offset(unravel(i, s.x_dims())), f.x[static_cast<size_t>(i)]);
      st = build_and_run(g, {{DY, hdy.data()}, {X, hx.data()}, {DW, hdw.data()}});
      ASSERT_TRUE(st.ok()) << st.to_string();
      const std::vector<double> dw = hdw.values();
      for (double v : dw) ASSERT_FALSE(std::isnan(v)) << "an element of DW was not written";
      const double lhs = dot(f.y, dy), rhs = dot(f.w, dw);
      EXPECT_NEAR(lhs, rhs, 1e-5 * (abs_dot(f.y, dy) + abs_dot(f.w, dw)) + 1e-12)
          << (inferred ? "DW dims inferred" : "DW dims set");
    }
  }
}

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
      st = build_and_run(g, {{X, hx.data()}, {W, hw.data()}, {B, hb.data()}, {R, hr.data()}});
      ASSERT_TRUE(st.ok()) << st.to_string();
      const auto got = hr.values();
      const auto y = im2col_fprop(s, x, w);
      const int64_t ovol = volume(s.y_sp), k_total = s.groups * s.k_per_group;
      const double rtol = tolerance_of(io);
      for (size_t i = 0; i < y.size(); ++i) {
        const double conv = dg::dtype::round_to(DataType::FLOAT, y[i]);
        const double biased = dg::dtype::round_to(DataType::FLOAT, conv + b[(i / ovol) % k_total]);
        const double want = std::max(0.0, biased);
        ASSERT_NEAR(got[i], want, rtol * std::fabs(want) + 1e-6) << "element " << i;
      }
    }
  }
}
