// Helpers for the CUDA tests: graphs lowered to generated CUDA source, device buffers, and the
// reference engine as the oracle.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cuda/codegen/emitter.hpp"
#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/memory.hpp"

namespace dnngraph::cuda::testing {

namespace dg = dnngraph;

// A graph's partitions as generated pointwise kernels (graph built for the CPU: codegen needs no GPU).
struct Generated {
  std::vector<std::string> sources;
  std::vector<codegen::Layout> layouts;
};

inline ::testing::AssertionResult generate(dg::Graph& g, const codegen::LayoutOptions& o, Generated& out) {
  dg::Handle cpu(dg::Device::cpu());
  if (auto s = g.validate(); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  if (auto s = g.build_operation_graph(cpu); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  const ir::Graph& ir = *g.impl().ir;
  std::vector<Partition> parts;
  if (auto s = partition_graph(ir, parts); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  for (const auto& p : parts) {
    expr::Program prog;
    std::string why;
    if (!expr::lower(p, -1, prog, why)) return ::testing::AssertionFailure() << "lower: " << why;
    codegen::Layout L;
    if (!codegen::plan_layout(prog, ir, o, L, why)) return ::testing::AssertionFailure() << "layout: " << why;
    out.sources.push_back(codegen::emit_pointwise(prog, ir, L));
    out.layouts.push_back(L);
  }
  return ::testing::AssertionSuccess();
}

inline dg::TensorPtr input(dg::Graph& g, const std::string& name, std::vector<int64_t> dims, dg::DataType t,
                           std::vector<int64_t> strides = {}) {
  if (strides.empty()) {
    strides.assign(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  }
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
}

inline dg::TensorPtr pw(dg::Graph& g, dg::PointwiseMode m, dg::TensorPtr a, dg::TensorPtr b = nullptr,
                        dg::TensorPtr c = nullptr) {
  auto attr = dg::PointwiseAttr().set_mode(m);
  if (c) return g.pointwise(a, b, c, attr);
  if (b) return g.pointwise(a, b, attr);
  return g.pointwise(a, attr);
}

inline dg::TensorPtr reduce(dg::Graph& g, dg::ReductionMode m, dg::TensorPtr x, std::vector<int64_t> out_dims) {
  auto y = g.reduction(x, dg::ReductionAttr().set_mode(m));
  y->set_dim(out_dims);
  return y;
}

// A usable CUDA handle, or null (the test then skips).
inline std::unique_ptr<dg::Handle> cuda_handle(std::string& why) {
  if (device_count() == 0) {
    why = driver() ? "the CUDA driver reports no device" : driver_error();
    return nullptr;
  }
  auto h = std::make_unique<dg::Handle>(dg::Device::cuda(0));
  if (!h->status().ok()) {
    why = h->status().to_string();
    return nullptr;
  }
  if (!nvrtc()) {
    why = nvrtc_error();
    return nullptr;
  }
  return h;
}

#define DG_REQUIRE_CUDA(handle_var)                                  \
  std::string cuda_skip_reason;                                      \
  auto handle_var = ::dnngraph::cuda::testing::cuda_handle(cuda_skip_reason); \
  if (!handle_var) GTEST_SKIP() << "no CUDA device: " << cuda_skip_reason

// Host data of a tensor, seeded random in [-2, 2) (never zeros), rounded to its type.
inline std::vector<uint8_t> random_bytes(const ir::Tensor& t, uint32_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.span_bytes()));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  const int64_t n = t.span_bytes() / size_of(t.dtype);
  for (int64_t i = 0; i < n; ++i) {
    double v = u(rng);
    if (t.dtype == DataType::BOOLEAN) v = v > 0;
    if (t.dtype == DataType::UINT8) v = std::fabs(v) * 60;
    if (t.dtype == DataType::INT8 || t.dtype == DataType::INT32) v = v * 50;
    dtype::store(bytes.data(), t.dtype, i, v);
  }
  return bytes;
}

// Bytes that read back as NaN (or a poison pattern for integer types) in every element.
inline std::vector<uint8_t> poison_bytes(const ir::Tensor& t) {
  std::vector<uint8_t> bytes(static_cast<size_t>(t.span_bytes()), 0x7f);
  const int64_t n = t.span_bytes() / size_of(t.dtype);
  if (is_floating(t.dtype))
    for (int64_t i = 0; i < n; ++i) dtype::store(bytes.data(), t.dtype, i, std::nan(""));
  return bytes;
}

// Relative error ||a - b|| / ||b|| over the tensor's elements, with NaN anywhere in a (not in b) a failure.
inline double relative_error(const ir::Tensor& t, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                             std::string& first_bad) {
  double num = 0, den = 0;
  std::vector<int64_t> idx(t.dims.size(), 0);
  const int64_t vol = t.volume();
  for (int64_t n = 0; n < vol; ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * t.strides[i];
    const double x = dtype::load(a.data(), t.dtype, off), y = dtype::load(b.data(), t.dtype, off);
    if (std::isnan(x) != std::isnan(y) || (std::isinf(y) && x != y)) {
      if (first_bad.empty()) first_bad = "element " + std::to_string(n) + ": got " + std::to_string(x) + ", want " + std::to_string(y);
      return INFINITY;
    }
    if (!std::isnan(y) && !std::isinf(y)) {
      num += (x - y) * (x - y);
      den += y * y;
    }
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < t.dims[k]) break;
      idx[k] = 0;
    }
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace dnngraph::cuda::testing
