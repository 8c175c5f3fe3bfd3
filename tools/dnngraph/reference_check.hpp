// Checking a graph's outputs against the reference engine: the reference run, tolerances by type,
// element-wise comparisons and checksums.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "host_tensors.hpp"

namespace dnngraph::cli {

// ---- checking against the reference engine

// The graph given as JSON, run with only the ref engine on the CPU on the inputs of `inputs` (by
// uid); `outputs` receives every tensor with the outputs computed.
Status run_reference(const std::string& graph_json, const std::vector<HostTensor>& inputs,
                     std::vector<HostTensor>& outputs);

// Tolerance of a graph's outputs against ref: by the least precise type the graph computes or
// stores in (fp32 1e-4, fp16 3e-3, bf16 1e-2, fp8 ~1e-1; integer types exact).
double graph_tolerance(const Graph& g);
double tolerance_of(DataType t);

struct Comparison {
  std::string name;
  int64_t uid = -1;
  int64_t elements = 0;
  int64_t mismatches = 0;  // elements outside the tolerance (NaN where ref is not counts)
  double max_abs = 0;      // max |got - ref|
  double max_rel = 0;      // max |got - ref| / (|ref| + mean |ref|)
  double tolerance = 0;
  double checksum = 0;     // sum of the elements of `got`
  double ref_checksum = 0;
  bool ok = false;
};
// Element-wise comparison: an element passes when |got - ref| <= tol * (|ref| + mean |ref|);
// exact for integer types; NaN equals NaN.
Comparison compare_tensors(const HostTensor& got, const HostTensor& ref, double tolerance);
// Every output of `got` against the output with the same uid in `ref`.
Status compare_outputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& ref, double tolerance,
                       std::vector<Comparison>& out);
// "Y [32,256,56,56] BFLOAT16: max abs 1.2e-03, max rel 3.1e-03 (tol 1.0e-02), checksum 1.234e+04: ok"
std::string format_comparison(const Comparison& c);
// Sum of a tensor's elements (row-major over dims).
double checksum(const HostTensor& t);
std::string dims_text(const std::vector<int64_t>& dims);

}  // namespace dnngraph::cli
