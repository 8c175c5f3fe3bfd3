// Convolution, pooling and resizing geometry at the extremes: paddings, strides and dilations of
// 0, -1, 2^40 .. 2^48 + 1 and INT64_MAX, kernels that do not fit, outputs beyond 2^48, and the
// small-but-strange ones that are valid (padding 2^40 with stride 2^40 gives a 3-wide output) and
// must run and agree with ref. Verdicts are computed here in 128-bit arithmetic.
#include <algorithm>
#include <cmath>
#include <limits>

#include "bad_input/cases.hpp"

namespace bad_input {
namespace {

using dg::DataType;
using dg::ErrorCode;

// Mostly small values, sometimes one of the extremes.
int64_t pick_param(std::mt19937_64& rng, int64_t small_lo, int64_t small_hi) {
  static const Dims kExtremes{-1, 0, int64_t{1} << 40, int64_t{1} << 47, kLimit, kLimit + 1, INT64_MAX};
  if (rng() % 3 == 0) return kExtremes[rng() % kExtremes.size()];
  return small_lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(small_hi - small_lo + 1));
}

struct ConvGeometry {
  Dims x, w, pre, post, stride, dilation;
};

ConvGeometry random_conv(std::mt19937_64& rng) {
  ConvGeometry c;
  const size_t nsp = 1 + rng() % 2;
  const int64_t groups = rng() % 4 == 0 ? 2 : 1;
  const int64_t cin = groups * (1 + static_cast<int64_t>(rng() % 3));
  c.x = {1 + static_cast<int64_t>(rng() % 2), cin};
  c.w = {groups * (1 + static_cast<int64_t>(rng() % 3)), cin / groups};
  for (size_t i = 0; i < nsp; ++i) {
    c.x.push_back(1 + static_cast<int64_t>(rng() % 7));
    c.w.push_back(1 + static_cast<int64_t>(rng() % 3));
    c.pre.push_back(pick_param(rng, 0, 2));
    c.post.push_back(pick_param(rng, 0, 2));
    c.stride.push_back(pick_param(rng, 1, 3));
    c.dilation.push_back(pick_param(rng, 1, 2));
  }
  if (rng() % 6 == 0) {  // a huge padding with a stride as large: a small output over a vast padded image
    const int64_t big = int64_t{1} << (30 + rng() % 17);
    c.pre[0] = c.post[0] = c.stride[0] = big;
  }
  return c;
}

std::string conv_where() { return node_named("conv", "conv_fprop"); }

// What conv_fprop must say, in the order validation checks.
Expect judge_conv(const ConvGeometry& c) {
  const size_t nsp = c.x.size() - 2;
  for (size_t i = 0; i < nsp; ++i) {
    if (c.pre[i] < 0 || c.post[i] < 0) return rejected(ErrorCode::INVALID_VALUE, conv_where(), "must not be negative");
    if (c.stride[i] < 1) return rejected(ErrorCode::INVALID_VALUE, conv_where(), "must be >= 1 in every spatial dim");
    if (c.dilation[i] < 1) return rejected(ErrorCode::INVALID_VALUE, conv_where(), "must be >= 1 in every spatial dim");
    for (int64_t v : {c.pre[i], c.post[i], c.stride[i], c.dilation[i]})
      if (v > kLimit) return rejected(ErrorCode::INVALID_VALUE, conv_where(), "must be at most 2^48");
  }
  Wide out_elements = c.x[0] * c.w[0];
  int64_t macs = c.x[0] * c.w[0] * c.w[1];
  for (size_t i = 0; i < nsp; ++i) {
    const Wide room = Wide{c.x[i + 2]} + c.pre[i] + c.post[i] - 1;
    const Wide reach = Wide{c.dilation[i]} * (c.w[i + 2] - 1);
    const Wide o = reach > room ? 0 : (room - reach) / c.stride[i] + 1;
    if (o < 1)
      return rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, conv_where() + ", " + tensor_named("X"),
                      "(output size would be < 1)");
    if (o > kLimit)
      return rejected(ErrorCode::INVALID_VALUE, conv_where() + ", " + tensor_named("Y"), "hold a dim above 2^48");
    out_elements *= o;
    macs *= c.w[i + 2];
  }
  if (out_elements > kLimit)
    return rejected(ErrorCode::INVALID_VALUE, conv_where() + ", " + tensor_named("Y"), "hold more than 2^48 elements");
  if (out_elements * 4 > kLimit)
    return rejected(ErrorCode::INVALID_VALUE, conv_where() + ", " + tensor_named("Y"), "span more than 2^48 bytes");
  return out_elements * macs <= 4'000'000 ? runs() : plans_only();
}

Case conv_case(std::string name, const ConvGeometry& c, Dims x_strides) {
  auto build = [c, x_strides](dg::Graph& g) {
    auto x = user_tensor(g, "X", c.x, x_strides);
    auto w = user_tensor(g, "W", c.w, packed_strides(c.w));
    auto attr = dg::ConvFpropAttr()
                    .set_name("conv")
                    .set_pre_padding(c.pre)
                    .set_post_padding(c.post)
                    .set_stride(c.stride)
                    .set_dilation(c.dilation);
    g.conv_fprop(x, w, attr)->set_output(true).set_name("Y");
  };
  return Case{std::move(name), build, {}, judge_conv(c)};
}

void add_conv_fprop_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(41);
  for (int i = 0; i < 70; ++i) {
    const ConvGeometry c = random_conv(rng);
    Dims xs = packed_strides(c.x);
    if (rng() % 2) {  // channels-last
      xs[1] = 1;
      int64_t run = c.x[1];
      for (size_t k = c.x.size(); k-- > 2;) {
        xs[k] = run;
        run *= c.x[k];
      }
      xs[0] = run;
    }
    cases.push_back(conv_case("conv_fprop_" + std::to_string(i), c, xs));
  }
}

// conv_dgrad and conv_wgrad with the gradient's dims given and DY's from the forward relation:
// valid ones run (a stride of 2^40 included); a padding of INT64_MAX is refused. Without DX's
// dims, a stride of 2^40 or 2^48 makes a transposed convolution too large to exist.
void add_conv_backward_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(43);
  for (int i = 0; i < 24; ++i) {
    const bool dgrad = i % 2 == 0;
    const int64_t pad = rng() % 5 == 0 ? INT64_MAX : static_cast<int64_t>(rng() % 2);
    const int64_t stride = rng() % 4 == 1 ? int64_t{1} << 40 : 1 + static_cast<int64_t>(rng() % 2);
    const Dims x{1, 2, 3 + static_cast<int64_t>(rng() % 4), 3 + static_cast<int64_t>(rng() % 4)};
    const Dims w{2, 2, 1 + static_cast<int64_t>(rng() % 3), 1 + static_cast<int64_t>(rng() % 3)};
    Dims dy{1, 2, 0, 0};
    for (size_t k = 2; k < 4; ++k) dy[k] = (x[k] + 2 * std::min<int64_t>(pad, 1) - w[k]) / stride + 1;
    const std::string op = dgrad ? "conv_dgrad" : "conv_wgrad";
    const Expect e =
        pad == INT64_MAX ? rejected(ErrorCode::INVALID_VALUE, node_named("grad", op), "must be at most 2^48") : runs();
    auto build = [=](dg::Graph& g) {
      auto d = user_tensor(g, "DY", dy, packed_strides(dy));
      const Dims p{pad, pad}, s{stride, stride};
      if (dgrad) {
        auto out = g.conv_dgrad(d, user_tensor(g, "W", w, packed_strides(w)),
                                dg::ConvDgradAttr().set_name("grad").set_padding(p).set_stride(s));
        out->set_output(true).set_dim(x).set_name("DX");
      } else {
        auto out = g.conv_wgrad(d, user_tensor(g, "X", x, packed_strides(x)),
                                dg::ConvWgradAttr().set_name("grad").set_padding(p).set_stride(s));
        out->set_output(true).set_dim(w).set_name("DW");
      }
    };
    cases.push_back(Case{op + "_" + std::to_string(i), build, {}, e});
  }
  const std::string where = node_named("grad", "conv_dgrad");
  // A DX whose dims the user gave with 0 channels (fuzz_graph_json's division by zero).
  cases.push_back(Case{"conv_dgrad_dx_of_no_channels",
                       [](dg::Graph& g) {
                         auto dy = user_tensor(g, "DY", {1, 2, 4, 4}, packed_strides({1, 2, 4, 4}));
                         auto w = user_tensor(g, "W", {2, 2, 3, 3}, packed_strides({2, 2, 3, 3}));
                         g.conv_dgrad(dy, w, dg::ConvDgradAttr().set_name("grad").set_padding({1, 1}))
                             ->set_output(true)
                             .set_dim({1, 0, 4, 4})
                             .set_name("DX");
                       },
                       {},
                       rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("DX"),
                                "channel count 0 must be positive")});
  const std::vector<std::pair<int64_t, Expect>> strides{
      {int64_t{1} << 40,
       rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("DX"), "hold more than 2^48 elements")},
      {kLimit, rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("DY"), "larger than 2^48")},
      {int64_t{1} << 20, plans_only()}};
  for (size_t i = 0; i < strides.size(); ++i) {
    const int64_t s = strides[i].first;
    auto build = [s](dg::Graph& g) {
      auto dy = user_tensor(g, "DY", {1, 2, 2, 2}, packed_strides({1, 2, 2, 2}));
      auto w = user_tensor(g, "W", {2, 1, 3, 3}, packed_strides({2, 1, 3, 3}));
      g.conv_dgrad(dy, w, dg::ConvDgradAttr().set_name("grad").set_stride({s, s}))->set_output(true).set_name("DX");
    };
    cases.push_back(Case{"conv_dgrad_inferred_" + std::to_string(i), build, {}, strides[i].second});
  }
}

// Convolutions of wrong ranks and of every type pairing: 8-bit integers accumulate into INT32 or
// FLOAT, BOOLEAN and INT64 are refused, X and W must share a type.
void add_conv_rank_type_cases(std::vector<Case>& cases) {
  struct Variant {
    std::string name;
    Dims x, w;
    DataType xt, wt, yt;  // yt NOT_SET: inferred
    Expect e;
  };
  const Dims x4{1, 2, 5, 5}, w4{2, 2, 3, 3};
  const std::string x = conv_where() + ", " + tensor_named("X"), w = conv_where() + ", " + tensor_named("W"),
                    y = conv_where() + ", " + tensor_named("Y");
  const std::vector<Variant> variants{
      {"rank_2",
       {2, 3},
       {2, 3},
       DataType::FLOAT,
       DataType::FLOAT,
       DataType::NOT_SET,
       rejected(ErrorCode::INVALID_VALUE, x, "rank 2 is outside 3..5")},
      {"rank_6",
       {1, 2, 2, 2, 2, 2},
       {2, 2, 1, 1, 1, 1},
       DataType::FLOAT,
       DataType::FLOAT,
       DataType::NOT_SET,
       rejected(ErrorCode::INVALID_VALUE, x, "rank 6 is outside 3..5")},
      {"rank_mismatch",
       x4,
       {2, 2, 3},
       DataType::FLOAT,
       DataType::FLOAT,
       DataType::NOT_SET,
       rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, w, "rank 3 differs from X's rank 4")},
      {"rank_3", {1, 2, 7}, {2, 2, 3}, DataType::FLOAT, DataType::FLOAT, DataType::NOT_SET, runs()},
      {"rank_5", {1, 2, 3, 4, 4}, {2, 2, 2, 2, 2}, DataType::FLOAT, DataType::FLOAT, DataType::NOT_SET, runs()},
      {"int8_to_int8", x4, w4, DataType::INT8, DataType::INT8, DataType::NOT_SET,
       rejected(ErrorCode::INVALID_DATA_TYPE, y, "the output must be INT32 or FLOAT")},
      {"int8_to_int32", x4, w4, DataType::INT8, DataType::INT8, DataType::INT32, runs()},
      {"int8_to_float", x4, w4, DataType::INT8, DataType::INT8, DataType::FLOAT, runs()},
      {"boolean", x4, w4, DataType::BOOLEAN, DataType::BOOLEAN, DataType::NOT_SET,
       rejected(ErrorCode::INVALID_DATA_TYPE, x, "BOOLEAN is not allowed for convolutions")},
      {"int64", x4, w4, DataType::INT64, DataType::INT64, DataType::NOT_SET,
       rejected(ErrorCode::INVALID_DATA_TYPE, x, "INT64 is not allowed for convolutions")},
      // Two floating types: each input is read in the compute type (the frontend's FLOAT prologue
      // into a HALF conv); integer inputs must match.
      {"float_half", x4, w4, DataType::FLOAT, DataType::HALF, DataType::NOT_SET, runs()},
      {"int8_float", x4, w4, DataType::INT8, DataType::FLOAT, DataType::NOT_SET,
       rejected(ErrorCode::INVALID_DATA_TYPE, w, "differs from the INT8 of 'X' (convolution inputs must share a data "
                                                 "type unless both are floating point)")},
      {"half", x4, w4, DataType::HALF, DataType::HALF, DataType::NOT_SET, runs()},
      {"bfloat16", x4, w4, DataType::BFLOAT16, DataType::BFLOAT16, DataType::NOT_SET, runs()},
      {"double", x4, w4, DataType::DOUBLE, DataType::DOUBLE, DataType::NOT_SET, runs()},
  };
  for (const auto& v : variants) {
    auto build = [v](dg::Graph& g) {
      auto out =
          g.conv_fprop(user_tensor(g, "X", v.x, packed_strides(v.x), v.xt),
                       user_tensor(g, "W", v.w, packed_strides(v.w), v.wt), dg::ConvFpropAttr().set_name("conv"));
      out->set_output(true).set_name("Y");
      if (v.yt != DataType::NOT_SET) out->set_data_type(v.yt);
    };
    cases.emplace_back("conv_" + v.name, build, "", v.e);
  }
}

struct PoolGeometry {
  Dims x, window, stride, pre, post;
};

// What pooling must say, in the order validation checks.
Expect judge_pool(const PoolGeometry& p) {
  const std::string where = node_named("pool", "resample");
  // Window and stride at least 1, paddings at least 0, all at most 2^48: attribute by attribute.
  const std::pair<const Dims*, int64_t> attrs[] = {{&p.window, 1}, {&p.stride, 1}, {&p.pre, 0}, {&p.post, 0}};
  for (const auto& [v, min] : attrs)
    for (int64_t x : *v) {
      if (x < min) return rejected(ErrorCode::INVALID_VALUE, where, "must all be >= " + std::to_string(min));
      if (x > kLimit) return rejected(ErrorCode::INVALID_VALUE, where, "must all be at most 2^48");
    }
  Wide elements = p.x[0] * p.x[1];
  for (size_t i = 0; i < p.window.size(); ++i) {
    if (p.pre[i] >= p.window[i] || p.post[i] >= p.window[i])
      return rejected(ErrorCode::INVALID_VALUE, where, "must be smaller than the window");
    const Wide padded = Wide{p.x[i + 2]} + p.pre[i] + p.post[i];
    if (padded < p.window[i])
      return rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("X"),
                      "is smaller than the window");
    elements *= (padded - p.window[i]) / p.stride[i] + 1;
  }
  if (elements > (1 << 16)) return plans_only();
  return runs();
}

void add_pool_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(47);
  const dg::ResampleMode modes[] = {dg::ResampleMode::MAXPOOL, dg::ResampleMode::AVGPOOL_INCLUDE_PADDING,
                                    dg::ResampleMode::AVGPOOL_EXCLUDE_PADDING};
  for (int i = 0; i < 40; ++i) {
    PoolGeometry p;
    p.x = {1, 1 + static_cast<int64_t>(rng() % 3)};
    for (int k = 0; k < 2; ++k) {
      p.x.push_back(1 + static_cast<int64_t>(rng() % 6));
      p.window.push_back(pick_param(rng, 1, 3));
      p.stride.push_back(pick_param(rng, 1, 2));
      p.pre.push_back(rng() % 2 ? pick_param(rng, 0, 1) : 0);
      p.post.push_back(rng() % 2 ? pick_param(rng, 0, 1) : 0);
    }
    if (i % 8 == 7) {  // a window of INT64_MAX with paddings just below it: the padded size overflows
      p.window[0] = INT64_MAX;
      p.pre[0] = p.post[0] = INT64_MAX - 1;
    }
    const dg::ResampleMode mode = modes[rng() % 3];
    auto build = [p, mode](dg::Graph& g) {
      auto x = user_tensor(g, "X", p.x, packed_strides(p.x));
      auto attr = dg::ResampleAttr()
                      .set_name("pool")
                      .set_resampling_mode(mode)
                      .set_window(p.window)
                      .set_stride(p.stride)
                      .set_pre_padding(p.pre)
                      .set_post_padding(p.post);
      g.resample(x, attr)->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"pool_" + std::to_string(i), build, {}, judge_pool(p)});
  }
}

void add_resize_cases(std::vector<Case>& cases) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> scales{2.0,  0.5, 1.0,          3.0,  0.25, 1e-9, 0.0,   -1.0,
                                   -inf, inf, std::nan(""), 1e30, 1e15, 7e13, 1e300, 2.5};
  const std::string where = node_named("up", "resample");
  for (size_t i = 0; i < scales.size(); ++i) {
    for (const auto mode : {dg::ResampleMode::NEAREST, dg::ResampleMode::BILINEAR}) {
      const double s = scales[i];
      const double out = std::isfinite(s) ? std::floor(4.0 * s) : 0.0;
      Expect e = runs();
      if (!(out >= 1.0))
        e = rejected(ErrorCode::INVALID_VALUE, where, "gives an output size below 1 from 4");
      else if (out > static_cast<double>(kLimit))
        e = rejected(ErrorCode::INVALID_VALUE, where, "gives an output size above 2^48 from 4");
      else if (out * 4 * 4 * 2 * 4 > static_cast<double>(kLimit))
        e = rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("Y"), "2^48");
      else if (out > 64)
        e = plans_only();
      auto build = [s, mode](dg::Graph& g) {
        auto x = user_tensor(g, "X", {1, 2, 4, 4}, packed_strides({1, 2, 4, 4}));
        g.resample(x, dg::ResampleAttr().set_name("up").set_resampling_mode(mode).set_scale({s, 1.0}))
            ->set_output(true)
            .set_name("Y");
      };
      const std::string m = mode == dg::ResampleMode::NEAREST ? "nearest" : "bilinear";
      cases.push_back(Case{"resize_" + m + "_" + std::to_string(i), build, {}, e});
    }
  }
}

}  // namespace

void add_geometry_cases(std::vector<Case>& cases) {
  add_conv_fprop_cases(cases);
  add_conv_backward_cases(cases);
  add_conv_rank_type_cases(cases);
  add_pool_cases(cases);
  add_resize_cases(cases);
}

}  // namespace bad_input
