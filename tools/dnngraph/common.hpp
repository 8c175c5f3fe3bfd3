// Helpers shared by the dnngraph subcommands (info, run, tune, tour): devices, graph files, the
// build steps, seeded inputs, device buffers, timing, comparison with the reference engine and
// checksums. Everything returns a Status; printing is left to the commands.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "runtime/memory.hpp"

namespace dnngraph::cli {

// Process exit codes of the commands.
inline constexpr int kExitCheckFailed = 1;  // an output disagreed with the reference engine
inline constexpr int kExitError = 2;        // bad input, or a library call failed

// Prints "error: CODE: message" to stderr and throws CLI::RuntimeError(kExitError) when `s` is bad.
void exit_on_error(const Status& s, const std::string& what);

// ---- devices and graphs

// "cpu", "cuda" (= cuda:0) or "cuda:N".
Status parse_device(const std::string& text, Device& out);
// CUDA device 0 when a handle opens on it, else the CPU; `why_not_cuda` says why not, if not.
Device best_device(std::string& why_not_cuda);

Status read_text_file(const std::string& path, std::string& text);
// Reads a graph JSON file (docs/graph-json.md).
Status load_graph_file(const std::string& path, Graph& graph);

// validate, build_operation_graph, create_execution_plans({A, FALLBACK}) and check_support.
Status plan_graph(Graph& g, const Handle& h);
// plan_graph, then build_plans(policy) (plan_index < 0) or build_plan_at_index(plan_index).
Status build_graph(Graph& g, const Handle& h, BuildPlanPolicy policy = BuildPlanPolicy::HEURISTICS_CHOICE,
                   int64_t plan_index = -1);

// One line per plan index: "plan 0: cpu_conv_implicit_gemm[...] + ref".
std::vector<std::string> plan_names(const Graph& g);
// One line per partition: "partition 0 (conv_fprop+epilogue): conv, bias, relu -> 3 candidates".
std::vector<std::string> partition_lines(const Graph& g);
// Whether a partition's chosen plan is the engine called `engine` ("ref", ...).
bool chosen_plan_uses(const Graph& g, const std::string& engine);
// FLOPs of the whole graph by the cost model's count (0 when plans are not created).
double graph_flops(const Graph& g);

// ---- tensors

// A non-virtual tensor of a graph as host bytes: a graph input (random values), an output, or a
// pass-by-value scalar without a value baked in (a random host value).
struct HostTensor {
  int64_t uid = -1;
  std::string name;
  DataType dtype = DataType::NOT_SET;
  std::vector<int64_t> dims, strides;
  bool is_output = false;
  bool is_pass_by_value = false;
  std::vector<uint8_t> bytes;  // the span from the base pointer: (max offset + 1) elements

  int64_t volume() const;
  // Element `i` in row-major order over dims (strides applied), as a double.
  double at(int64_t i) const;
};

// Every non-virtual tensor of `g` (after build_operation_graph), inputs filled with values drawn
// from `seed`: uniform [-1, 1] for floating types, small integers, 0/1 booleans, and sequence
// lengths in [1, seq] for sdpa's SEQ_LEN inputs. Output bytes are allocated but not filled.
Status make_host_tensors(const Graph& g, uint64_t seed, std::vector<HostTensor>& out);
// Copies input bytes (and pass-by-value values) from `src` into `dst` by uid; the layouts must agree.
Status copy_inputs(const std::vector<HostTensor>& src, std::vector<HostTensor>& dst);

// Device memory for a graph's tensors on one handle, its variant pack by uid, and a workspace.
class DeviceTensors {
 public:
  // Allocates every tensor on the handle's device, copies inputs in and poisons outputs.
  Status upload(const Handle& h, const std::vector<HostTensor>& host);
  // Writes NaN into every element of every output (`int_poison` bytes for non-float types), so
  // that elements an engine leaves unwritten fail the comparison.
  Status poison_outputs(uint8_t int_poison = 0xA5);
  // Copies the outputs back into `host` (the vector given to upload, or one like it).
  Status download_outputs(std::vector<HostTensor>& host) const;
  // Grows the workspace to at least `bytes`.
  Status reserve_workspace(int64_t bytes);

  const UidVariantPack& pack() const { return pack_; }
  void* workspace() const { return workspace_.get(); }
  int64_t workspace_bytes() const { return static_cast<int64_t>(workspace_.size()); }

 private:
  std::unique_ptr<Handle> handle_;
  std::vector<HostTensor> layout_;  // what each buffer holds (bytes of outputs unused)
  std::vector<memory::Buffer> buffers_;
  std::vector<std::vector<uint8_t>> host_scalars_;  // pass-by-value values, by index in layout_
  memory::Buffer workspace_;
  UidVariantPack pack_;
};

// Builds `g` (modes A, FALLBACK; the heuristics' choice), uploads `tensors`, executes once and
// downloads the outputs into `tensors`.
Status run_once(Graph& g, const Handle& h, std::vector<HostTensor>& tensors);

// ---- timing

struct Timing {
  double median_s = 0;
  double min_s = 0;
  int iters = 0;
};
// Runs `fn` once to warm up, then `iters` times, waiting for the device after each; the median.
Status time_runs(const Handle& h, int iters, const std::function<Status()>& fn, Timing& out);
// "1.23 ms", "456 us", "2.1 s".
std::string format_seconds(double s);
// "12.3 GFLOP/s" for `flops` done in `s` seconds; "" when flops is 0.
std::string format_rate(double flops, double s);

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
