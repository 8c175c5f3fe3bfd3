// What the tools (the dnngraph command, the benches) read of a graph's internals, as values: the
// IR's tensors, the partitions with their verdicts and candidates, the cost model's FLOPs, and the
// autotuner. The tools include this header instead of reaching into GraphImpl or the plan set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dnngraph/graph.hpp"
#include "planning/autotune.hpp"
#include "runtime/device_info.hpp"

namespace dnngraph::introspect {

struct TensorView {
  int64_t uid = -1;
  std::string name;
  DataType dtype = DataType::NOT_SET;
  std::vector<int64_t> dims, strides;
  bool is_virtual = false;
  bool is_produced = false;       // a node writes it (an output, when not virtual)
  bool is_pass_by_value = false;
  bool has_value = false;         // a pass-by-value scalar whose value the graph holds
  int64_t span_bytes = 0;         // from the base pointer to the last element, inclusive
  int64_t seq_len_bound = 0;      // an sdpa SEQ_LEN input: its lengths lie in [1, bound]; else 0
};

struct CandidateView {
  int engine_id = -1;
  std::string label;              // "engine[knobs]"
  double estimate_s = 0;
  double measured_s = -1;         // autotune's median; -1 when not timed
  bool from_tuning_db = false;    // put first by the tuning DB's record of this graph and device
  bool ready_first = false;       // put first: a tie with the best estimate that compiles nothing
};

struct PartitionView {
  std::string pattern;
  std::vector<std::string> nodes;     // node names
  std::vector<std::string> verdicts;  // one line per engine
  std::vector<CandidateView> candidates;
  size_t chosen = 0;
};

// Every tensor the graph's nodes read or write, as the user's TensorPtrs (a variant pack by tensor
// is made from them).
std::vector<TensorPtr> user_tensors(const Graph& g);
// The graph's name and node count as built.
std::string graph_name(const Graph& g);
size_t node_count(const Graph& g);
// The IR's tensors; INVALID_CALL_ORDER before build_operation_graph.
Status tensors(const Graph& g, std::vector<TensorView>& out);
// The IR's serial (ir::Graph::serial): changes whenever build_operation_graph or deserialize makes
// a new IR, so views taken from tensors() can be kept until it does; 0 before there is one.
uint64_t ir_serial(const Graph& g);
// The compute types of the IR's nodes, and whether one of them is attention.
std::vector<DataType> compute_types(const Graph& g);
bool has_attention(const Graph& g);
// Empty before create_execution_plans.
std::vector<PartitionView> partitions(const Graph& g);
// The cost model's FLOPs of every partition (0 before create_execution_plans).
double graph_flops(const Graph& g);
const DeviceInfo& device_info(const Handle& h);
// Graph::autotune with the options and per-candidate timings `dnngraph tune` shows.
Status autotune(Graph& g, const Handle& h, const UidVariantPack& pack, void* workspace,
                const AutotuneOptions& options, std::vector<CandidateTiming>* timings);

}  // namespace dnngraph::introspect
