// A graph's tensors as host bytes with seeded inputs, their device copies and variant pack, and
// the timing of runs.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "planning/introspect.hpp"
#include "runtime/memory.hpp"

namespace dnngraph::cli {

// Calls fn(offset_a, offset_b) for every index of `dims` in row-major order.
template <class Fn>
void for_each_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb,
                     Fn&& fn) {
  for (int64_t d : dims)
    if (d <= 0) return;
  const size_t rank = dims.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  while (true) {
    fn(oa, ob);
    size_t k = rank;
    while (true) {
      if (k == 0) return;  // every dim wrapped around: done (rank 0 has one element)
      --k;
      if (++idx[k] < dims[k]) {
        oa += sa[k];
        ob += sb[k];
        break;
      }
      oa -= sa[k] * (dims[k] - 1);
      ob -= sb[k] * (dims[k] - 1);
      idx[k] = 0;
    }
  }
}

// ---- tensors

// A non-virtual tensor of a graph as host bytes: a graph input (random values), an output, or a
// pass-by-value scalar without a value baked in (a random host value). Its layout is the IR's view.
struct HostTensor : introspect::TensorView {
  std::vector<uint8_t> bytes;  // the span from the base pointer: (max offset + 1) elements

  HostTensor() = default;
  explicit HostTensor(introspect::TensorView view) : TensorView(std::move(view)) {}
  // A node writes it, and it is never virtual: an output of the graph.
  bool is_output() const { return is_produced; }
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

// Uploads `tensors`, executes the built graph once and downloads the outputs into `tensors`.
Status execute_built(const Graph& g, const Handle& h, std::vector<HostTensor>& tensors);
// Builds `g` (modes A, FALLBACK; the heuristics' choice), then execute_built.
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

}  // namespace dnngraph::cli
