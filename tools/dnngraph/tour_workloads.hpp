// The tour's workloads (the tutorial graphs, built with the C++ API at any batch size), their sizes,
// and the check against ref, which at full sizes runs ref on single batch elements.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "graphs.hpp"
#include "host_tensors.hpp"
#include "reference_check.hpp"

namespace dnngraph::cli {

struct ConvSize { int64_t n, c, h, w, k; };
struct MatmulSize { int64_t batch, m, k, n; };
struct SdpaSize { int64_t b, h, s, d; };

struct TourSizes {
  ConvSize conv{};
  MatmulSize matmul{};
  SdpaSize attention{};
  std::vector<int64_t> dynamic_batches;
  static TourSizes full();     // the tutorial's sizes, for GPUs
  static TourSizes reduced();  // small enough for the reference engine on two CPU cores
  std::string describe() const;
};

struct Workload {
  std::string title;
  std::string summary;                          // shapes, layouts and types, one line
  std::function<Graph(int64_t batch)> build;    // every user tensor has a fixed uid
  int64_t batch = 1;                            // the batch size the tour runs
};

// conv 3x3 + bias + ReLU, NHWC, bf16 in and out, fp32 in between.
Workload conv_workload(const ConvSize& s);
// batched matmul -> x alpha (pass-by-value) -> + bias -> GELU, with AMAX(GELU) as a second output.
Workload matmul_workload(const MatmulSize& s);
// causal scaled dot-product attention, bf16, (b, s, h, d) in memory.
Workload sdpa_workload(const SdpaSize& s);

// Ref's outputs for one run: of the whole graph, or (by slices) of the graph at batch 1 on the first
// and the last batch element.
struct Reference {
  bool by_slices = false;
  std::vector<HostTensor> whole;
  std::vector<std::pair<int64_t, std::vector<HostTensor>>> slices;  // batch index -> outputs
};
Status compute_reference(const Workload& w, const Graph& g, const std::vector<HostTensor>& inputs, bool by_slices,
                         Reference& ref);
// Every output of `got` against `ref`. With slices, outputs without a batch dim cannot be compared
// and are listed in `unchecked`.
void compare_with_reference(const Reference& ref, const std::vector<HostTensor>& got, double tolerance,
                            std::vector<Comparison>& out, std::vector<std::string>& unchecked);
// Batch element `b` of `full`, shaped like `like` (the same tensor at batch 1).
Status batch_slice(const HostTensor& full, const HostTensor& like, int64_t b, HostTensor& out);
// The matmul workload's AMAX output against max |Y| of the Y it was computed with; prints a line.
bool check_amax_against_output(const std::vector<HostTensor>& tensors, double tolerance, const char* indent);

// Captures the graph's chosen plans into a CUDA graph, replays it, and times replay against
// launching on the stream. The outputs are left in `dev`. GPU handles only.
struct CudaGraphRun {
  int64_t nodes = 0;
  double replay_s = 0;
  double stream_s = 0;
};
Status run_in_cuda_graph(const Handle& h, const Graph& g, DeviceTensors& dev, int iters, CudaGraphRun& out);

}  // namespace dnngraph::cli
