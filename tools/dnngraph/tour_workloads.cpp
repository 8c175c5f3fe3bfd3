#include "tour_workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace dnngraph::cli {
namespace {

std::vector<int64_t> nhwc_strides(const std::vector<int64_t>& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

std::vector<int64_t> packed_strides(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

TensorAttr nhwc(const char* name, std::vector<int64_t> dims, int64_t uid) {
  auto strides = nhwc_strides(dims);
  return TensorAttr().set_name(name).set_dim(std::move(dims)).set_stride(std::move(strides)).set_uid(uid);
}

TensorAttr packed(const char* name, std::vector<int64_t> dims, int64_t uid) {
  auto strides = packed_strides(dims);
  return TensorAttr().set_name(name).set_dim(std::move(dims)).set_stride(std::move(strides)).set_uid(uid);
}

// bf16 in and out, fp32 intermediates and math: the tutorial's precision.
void bf16_graph(Graph& g, const char* name) {
  g.set_name(name)
      .set_io_data_type(DataType::BFLOAT16)
      .set_intermediate_data_type(DataType::FLOAT)
      .set_compute_data_type(DataType::FLOAT);
}

const HostTensor* find_output(const std::vector<HostTensor>& ts, int64_t uid) {
  for (const auto& t : ts)
    if (t.uid == uid && t.is_output()) return &t;
  return nullptr;
}

}  // namespace

TourSizes TourSizes::full() {
  return {{32, 128, 56, 56, 256}, {16, 512, 1024, 512}, {4, 16, 1024, 64}, {4, 8, 16}};
}

TourSizes TourSizes::reduced() {
  return {{2, 32, 16, 16, 64}, {8, 64, 128, 64}, {1, 4, 256, 64}, {2, 4, 8}};
}

std::string TourSizes::describe() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "conv N%lld C%lld %lldx%lld -> K%lld; matmul (%lld,%lld,%lld)x(%lld,%lld,%lld); "
                "attention b%lld h%lld s%lld d%lld; dynamic batches",
                static_cast<long long>(conv.n), static_cast<long long>(conv.c), static_cast<long long>(conv.h),
                static_cast<long long>(conv.w), static_cast<long long>(conv.k), static_cast<long long>(matmul.batch),
                static_cast<long long>(matmul.m), static_cast<long long>(matmul.k), static_cast<long long>(matmul.batch),
                static_cast<long long>(matmul.k), static_cast<long long>(matmul.n), static_cast<long long>(attention.b),
                static_cast<long long>(attention.h), static_cast<long long>(attention.s),
                static_cast<long long>(attention.d));
  std::string s = buf;
  for (size_t i = 0; i < dynamic_batches.size(); ++i) s += (i ? "," : " ") + std::to_string(dynamic_batches[i]);
  return s;
}

Workload conv_workload(const ConvSize& s) {
  Workload w;
  w.title = "fused convolution + bias + ReLU, every plan timed";
  w.summary = "X " + dims_text({s.n, s.c, s.h, s.w}) + " NHWC bf16 * W " + dims_text({s.k, s.c, 3, 3}) +
              ", padding 1 -> + bias -> ReLU -> Y " + dims_text({s.n, s.k, s.h, s.w}) + "; fp32 in between";
  w.batch = s.n;
  w.build = [s](int64_t n) {
    Graph g;
    bf16_graph(g, "conv_bias_relu");
    auto x = g.tensor(nhwc("X", {n, s.c, s.h, s.w}, 1));
    auto wt = g.tensor(nhwc("W", {s.k, s.c, 3, 3}, 2));
    auto b = g.tensor(nhwc("B", {1, s.k, 1, 1}, 3));
    auto y = g.conv_fprop(x, wt, ConvFpropAttr().set_name("conv").set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
    auto z = g.pointwise(y, b, PointwiseAttr().set_name("bias").set_mode(PointwiseMode::ADD));
    auto r = g.pointwise(z, PointwiseAttr().set_name("relu").set_mode(PointwiseMode::RELU_FWD));
    r->set_name("Y").set_output(true).set_uid(4);
    return g;
  };
  return w;
}

Workload matmul_workload(const MatmulSize& s) {
  Workload w;
  w.title = "matmul epilogue: x alpha -> + bias -> GELU, with an AMAX output";
  w.summary = "A " + dims_text({s.batch, s.m, s.k}) + " x B " + dims_text({s.batch, s.k, s.n}) +
              " bf16 -> x alpha (0.5, pass-by-value) -> + bias " + dims_text({1, 1, s.n}) +
              " -> GELU -> Y (bf16), amax = AMAX(Y) (fp32)";
  w.batch = s.batch;
  w.build = [s](int64_t batch) {
    Graph g;
    bf16_graph(g, "matmul_epilogue_amax");
    auto a = g.tensor(packed("A", {batch, s.m, s.k}, 1));
    auto b = g.tensor(packed("B", {batch, s.k, s.n}, 2));
    auto alpha = g.tensor(TensorAttr().set_name("alpha").set_dim({1, 1, 1}).set_stride({1, 1, 1}).set_uid(3)
                              .set_data_type(DataType::FLOAT).set_value(0.5));
    auto bias = g.tensor(packed("bias", {1, 1, s.n}, 4));
    auto c = g.matmul(a, b, MatmulAttr().set_name("matmul"));
    auto scaled = g.pointwise(c, alpha, PointwiseAttr().set_name("scale").set_mode(PointwiseMode::MUL));
    auto biased = g.pointwise(scaled, bias, PointwiseAttr().set_name("bias").set_mode(PointwiseMode::ADD));
    auto y = g.pointwise(biased, PointwiseAttr().set_name("gelu").set_mode(PointwiseMode::GELU_FWD));
    y->set_name("Y").set_output(true).set_uid(5);
    auto amax = g.reduction(y, ReductionAttr().set_name("amax").set_mode(ReductionMode::AMAX));
    amax->set_name("amax").set_dim({1, 1, 1}).set_data_type(DataType::FLOAT).set_output(true).set_uid(6);
    return g;
  };
  return w;
}

Workload sdpa_workload(const SdpaSize& s) {
  Workload w;
  w.title = "causal attention";
  w.summary = "Q, K, V " + dims_text({s.b, s.h, s.s, s.d}) + " bf16, (b, s, h, d) in memory, causal mask, scale 1/sqrt(" +
              std::to_string(s.d) + ") -> O";
  w.batch = s.b;
  w.build = [s](int64_t b) {
    Graph g;
    bf16_graph(g, "sdpa_causal");
    const std::vector<int64_t> dims{b, s.h, s.s, s.d};
    const std::vector<int64_t> bshd{s.s * s.h * s.d, s.d, s.h * s.d, 1};
    auto q = g.tensor(TensorAttr().set_name("Q").set_dim(dims).set_stride(bshd).set_uid(1));
    auto k = g.tensor(TensorAttr().set_name("K").set_dim(dims).set_stride(bshd).set_uid(2));
    auto v = g.tensor(TensorAttr().set_name("V").set_dim(dims).set_stride(bshd).set_uid(3));
    auto o = g.sdpa(q, k, v, SdpaAttr().set_name("sdpa").set_is_inference(true).set_causal_mask(true)
                                  .set_attn_scale(1.0 / std::sqrt(static_cast<double>(s.d))));
    o[0]->set_name("O").set_output(true).set_stride(bshd).set_uid(4);
    return g;
  };
  return w;
}

Status batch_slice(const HostTensor& full, const HostTensor& like, int64_t b, HostTensor& out) {
  const auto bad = [&](const std::string& why) {
    return Status{ErrorCode::INVALID_VALUE, "batch slice of '" + full.name + "': " + why};
  };
  if (full.dims.empty() || full.dims.size() != like.dims.size() || like.dims[0] != 1 || full.dtype != like.dtype)
    return bad("not the same tensor at batch 1");
  if (b < 0 || b >= full.dims[0]) return bad("batch index " + std::to_string(b) + " out of range");
  for (size_t k = 1; k < full.dims.size(); ++k)
    if (full.dims[k] != like.dims[k] || full.strides[k] != like.strides[k]) return bad("layouts differ beyond dim 0");
  const size_t offset = static_cast<size_t>(b * full.strides[0] * size_of(full.dtype));
  if (offset + like.bytes.size() > full.bytes.size()) return bad("slice runs past the end");
  HostTensor s = like;
  s.bytes.assign(full.bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                 full.bytes.begin() + static_cast<std::ptrdiff_t>(offset + like.bytes.size()));
  out = std::move(s);
  return {};
}

Status compute_reference(const Workload& w, const Graph& g, const std::vector<HostTensor>& inputs, bool by_slices,
                         Reference& ref) {
  ref = Reference{};
  ref.by_slices = by_slices && w.batch > 1;
  if (!ref.by_slices) return run_reference(g.to_json(), inputs, ref.whole);
  Graph small = w.build(1);
  Handle cpu(Device::cpu());
  if (auto s = small.validate(); !s.ok()) return s;
  if (auto s = small.build_operation_graph(cpu); !s.ok()) return s;
  std::vector<HostTensor> layout;
  if (auto s = make_host_tensors(small, 0, layout); !s.ok()) return s;
  const std::string json = small.to_json();
  for (int64_t b : {int64_t{0}, w.batch - 1}) {
    std::vector<HostTensor> slice = layout;
    for (auto& t : slice) {
      if (t.is_output()) continue;
      auto it = std::find_if(inputs.begin(), inputs.end(), [&](const HostTensor& x) { return x.uid == t.uid; });
      if (it == inputs.end()) return {ErrorCode::INVALID_VALUE, "no input data for '" + t.name + "'"};
      if (it->dims == t.dims) t.bytes = it->bytes;
      else if (auto s = batch_slice(*it, t, b, t); !s.ok()) return s;
    }
    std::vector<HostTensor> out;
    if (auto s = run_reference(json, slice, out); !s.ok()) return s;
    ref.slices.emplace_back(b, std::move(out));
  }
  return {};
}

void compare_with_reference(const Reference& ref, const std::vector<HostTensor>& got, double tolerance,
                            std::vector<Comparison>& out, std::vector<std::string>& unchecked) {
  out.clear();
  unchecked.clear();
  if (!ref.by_slices) {
    if (auto s = compare_outputs(got, ref.whole, tolerance, out); !s.ok()) unchecked.push_back("not compared: " + s.message());
    return;
  }
  for (const auto& [b, outputs] : ref.slices) {
    for (const auto& r : outputs) {
      if (!r.is_output()) continue;
      const HostTensor* g = find_output(got, r.uid);
      if (!g) {
        unchecked.push_back("'" + r.name + "' missing from the outputs");
        continue;
      }
      if (g->dims == r.dims) {  // no batch dim: it depends on every batch element
        if (b == 0) unchecked.push_back("'" + r.name + "' spans the whole batch: not compared with ref");
        continue;
      }
      HostTensor view;
      if (auto s = batch_slice(*g, r, b, view); !s.ok()) {
        unchecked.push_back(s.message());
        continue;
      }
      Comparison c = compare_tensors(view, r, tolerance);
      c.name += " (batch " + std::to_string(b) + ")";
      out.push_back(c);
    }
  }
}

bool check_amax_against_output(const std::vector<HostTensor>& tensors, double tolerance, const char* indent) {
  const HostTensor* y = nullptr;
  const HostTensor* amax = nullptr;
  for (const auto& t : tensors) {
    if (t.is_output() && t.name == "Y") y = &t;
    if (t.is_output() && t.name == "amax") amax = &t;
  }
  if (!y || !amax) {
    std::cout << indent << "amax check: outputs 'Y' and 'amax' not found\n";
    return false;
  }
  double max_abs = 0;
  bool nan = false;
  for (int64_t i = 0; i < y->volume(); ++i) {
    const double v = y->at(i);
    nan |= std::isnan(v);
    max_abs = std::max(max_abs, std::fabs(v));
  }
  const double a = amax->at(0);
  const double rel = std::fabs(a - max_abs) / std::max(max_abs, 1e-30);
  const bool ok = !nan && rel <= tolerance;
  char buf[200];
  std::snprintf(buf, sizeof buf, "amax %.6g against max |Y| %.6g of the engine's own Y: rel err %.2e (tol %.0e): %s",
                a, max_abs, rel, tolerance, ok ? "ok" : "MISMATCH");
  std::cout << indent << buf << "\n";
  return ok;
}

}  // namespace dnngraph::cli
