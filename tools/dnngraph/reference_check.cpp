#include "reference_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/dtype.hpp"
#include "graphs.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::cli {

Status run_reference(const std::string& graph_json, const std::vector<HostTensor>& inputs,
                     std::vector<HostTensor>& outputs) {
  Graph ref;
  if (auto s = Graph::from_json(graph_json, ref); !s.ok()) return s;
  ref.select_engines({"ref"});
  Handle cpu(Device::cpu());
  if (auto s = build_graph(ref, cpu); !s.ok()) return s;
  std::vector<HostTensor> tensors;
  if (auto s = make_host_tensors(ref, 0, tensors); !s.ok()) return s;
  if (auto s = copy_inputs(inputs, tensors); !s.ok()) return s;
  if (auto s = execute_built(ref, cpu, tensors); !s.ok()) return s;
  outputs = std::move(tensors);
  return {};
}

double tolerance_of(DataType t) {
  switch (t) {
    case DataType::DOUBLE: return 1e-12;
    // fp32 engines reorder sums and use Winograd transforms; errors relative to the output's scale
    // reach 1e-5 on large graphs, so fp32 gets headroom. Real bugs are orders of magnitude larger.
    case DataType::FLOAT: return 1e-4;
    case DataType::HALF: return 3e-3;
    case DataType::BFLOAT16: return 1e-2;
    case DataType::FP8_E4M3: return 1.25e-1;
    case DataType::FP8_E5M2: return 2.5e-1;
    default: return 0;
  }
}

double graph_tolerance(const Graph& g) {
  double tol = tolerance_of(DataType::FLOAT);
  std::vector<introspect::TensorView> views;
  if (!introspect::tensors(g, views).ok()) return tol;
  for (const auto& t : views)
    if (t.is_produced) tol = std::max(tol, tolerance_of(t.dtype));
  for (DataType t : introspect::compute_types(g)) tol = std::max(tol, tolerance_of(t));
  const bool attention = introspect::has_attention(g);
  // Flash attention rounds the softmax probabilities to the input type before the product with V
  // (PyTorch's flash, cuDNN and efficient backends alike): on the tour's data they reach 3.3e-2 of
  // this metric in bf16, so attention outputs get 4x the type's tolerance.
  return attention ? 4 * tol : tol;
}

double checksum(const HostTensor& t) {
  double sum = 0;
  for_each_offset(t.dims, t.strides, t.strides, [&](int64_t o, int64_t) { sum += dtype::load(t.bytes.data(), t.dtype, o); });
  return sum;
}

Comparison compare_tensors(const HostTensor& got, const HostTensor& ref, double tolerance) {
  Comparison c;
  c.name = got.name;
  c.uid = got.uid;
  c.tolerance = is_integral(got.dtype) ? 0.0 : tolerance;
  if (got.dims != ref.dims || got.dtype != ref.dtype) {
    c.mismatches = std::max<int64_t>(got.volume(), 1);
    return c;
  }
  double mean_abs = 0;
  int64_t finite = 0;
  for_each_offset(ref.dims, ref.strides, ref.strides, [&](int64_t o, int64_t) {
    const double r = dtype::load(ref.bytes.data(), ref.dtype, o);
    c.ref_checksum += r;
    if (std::isfinite(r)) {
      mean_abs += std::fabs(r);
      ++finite;
    }
  });
  mean_abs = finite ? mean_abs / static_cast<double>(finite) : 0.0;
  for_each_offset(got.dims, got.strides, ref.strides, [&](int64_t og, int64_t oref) {
    const double x = dtype::load(got.bytes.data(), got.dtype, og);
    const double r = dtype::load(ref.bytes.data(), ref.dtype, oref);
    ++c.elements;
    c.checksum += x;
    if (std::isnan(x) && std::isnan(r)) return;
    if (x == r) return;  // equal infinities too
    const double diff = std::fabs(x - r);
    const double denom = std::fabs(r) + mean_abs;
    const double rel = std::isnan(diff) ? HUGE_VAL : (denom > 0 ? diff / denom : HUGE_VAL);
    if (!std::isnan(diff)) c.max_abs = std::max(c.max_abs, diff);
    c.max_rel = std::max(c.max_rel, rel);
    if (!(rel <= c.tolerance)) ++c.mismatches;
  });
  c.ok = c.mismatches == 0;
  return c;
}

Status compare_outputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, double tolerance,
                       std::vector<Comparison>& out) {
  out.clear();
  for (const auto& g : got) {
    if (!g.is_output()) continue;
    auto it = std::find_if(ref.begin(), ref.end(), [&](const HostTensor& r) { return r.uid == g.uid && r.is_output(); });
    if (it == ref.end())
      return {ErrorCode::INVALID_VALUE, "output '" + g.name + "' (uid " + std::to_string(g.uid) + ") has no reference"};
    out.push_back(compare_tensors(g, *it, tolerance));
  }
  return {};
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string format_comparison(const Comparison& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "max abs err %.3e, max rel err %.3e (tol %.0e), checksum %.6e (ref %.6e): ",
                c.max_abs, c.max_rel, c.tolerance, c.checksum, c.ref_checksum);
  std::string verdict = c.ok ? "ok" : "MISMATCH in " + std::to_string(c.mismatches) + " of " + std::to_string(c.elements) + " elements";
  return "'" + c.name + "': " + buf + verdict;
}

}  // namespace dnngraph::cli
