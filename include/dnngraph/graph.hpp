// Graph: build an operation graph, validate it, plan it, run it. Mirrors the cuDNN frontend's Graph.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "dnngraph/attributes.hpp"
#include "dnngraph/handle.hpp"
#include "dnngraph/kernel_cache.hpp"
#include "dnngraph/status.hpp"
#include "dnngraph/tensor.hpp"
#include "dnngraph/types.hpp"

#include "dnngraph/export.hpp"

// Not exported: outside the API region (dnngraph/export.hpp).
namespace dnngraph {
struct GraphImpl;
}

DNNGRAPH_API_BEGIN
namespace dnngraph {

using VariantPack = std::unordered_map<TensorPtr, void*>;
using UidVariantPack = std::unordered_map<int64_t, void*>;

// One knob of an engine, for the graph at hand, as get_knobs_for_engine reports it: the values the
// engine offers this graph's partitions (its knob_space), not every value its schema would accept.
struct EngineKnob {
  std::string name;  // the engine's knob name ("tile_n", "split_k", cudnn's "engine", ...), or "kernel_cfg"
  int64_t min_value = 0;
  int64_t max_value = 0;
  int64_t stride = 1;           // the gcd of the gaps between offered values
  std::vector<int64_t> values;  // ascending
};

// The cuDNN frontend's behaviour notes, as they apply to dnngraph's plans (docs/python.md).
enum class BehaviorNote : int {
  RUNTIME_COMPILATION = 0,         // a cuda_* engine: its kernels are compiled by NVRTC at build time (or read from the kernel cache)
  SUPPORTS_CUDA_GRAPH_NATIVE_API,  // a plan on a CUDA handle: populate_cuda_graph can capture it
  CUBLASLT_DEPENDENCY,             // the cublaslt engine
};

// The cuDNN frontend's numerical notes (its order), as dnngraph's plans carry them: TENSOR_CORE on
// the CUDA engines whose products run on tensor cores (own mma.sync/wgmma kernels, cuBLASLt's
// 16-bit and TF32 GEMMs, cuDNN's configs that say so), DOWN_CONVERT_INPUTS where FLOAT inputs run
// as TF32 (Graph::set_allow_tf32), NONDETERMINISTIC where cuDNN says its config may differ run to
// run, WINOGRAD (+ WINOGRAD_TILE_6x6: F(4x4, 3x3) transforms 6x6 tiles) on the Winograd
// engines. The others are cuDNN's alone.
enum class NumericalNote : int {
  TENSOR_CORE = 0, DOWN_CONVERT_INPUTS, REDUCED_PRECISION_REDUCTION, FFT, NONDETERMINISTIC, WINOGRAD,
  WINOGRAD_TILE_4x4, WINOGRAD_TILE_6x6, WINOGRAD_TILE_13x13, STRICT_NAN_PROP,
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // ---- graph-wide settings
  Graph& set_name(std::string name);
  Graph& set_io_data_type(DataType t);            // default for user tensors and outputs
  Graph& set_intermediate_data_type(DataType t);  // default for virtual tensors
  Graph& set_compute_data_type(DataType t);       // default for every op
  Graph& set_dynamic_shape_enabled(bool enabled); // sizes become kernel arguments
  // FLOAT matmuls and convolutions may run on tensor cores as TF32 (10-bit mantissa inputs, fp32
  // accumulation; ~1e-3 relative error). Off by default: FLOAT stays exact fp32, as in PyTorch's matmuls.
  Graph& set_allow_tf32(bool allowed);
  Graph& set_kernel_cache(std::shared_ptr<KernelCache> cache);
  // Engine filters by name ("ref", "cpu_gemm_packed", ...), applied by create_execution_plans.
  Graph& select_engines(std::vector<std::string> names);    // only these (empty: all)
  Graph& deselect_engines(std::vector<std::string> names);  // never these

  // ---- building
  TensorPtr tensor(const TensorAttr& attr);
  TensorPtr tensor(double scalar);  // a pass-by-value FLOAT scalar
  TensorPtr conv_fprop(TensorPtr x, TensorPtr w, ConvFpropAttr attr);
  TensorPtr conv_dgrad(TensorPtr dy, TensorPtr w, ConvDgradAttr attr);
  TensorPtr conv_wgrad(TensorPtr dy, TensorPtr x, ConvWgradAttr attr);
  TensorPtr matmul(TensorPtr a, TensorPtr b, MatmulAttr attr);
  TensorPtr pointwise(TensorPtr a, PointwiseAttr attr);
  TensorPtr pointwise(TensorPtr a, TensorPtr b, PointwiseAttr attr);
  TensorPtr pointwise(TensorPtr a, TensorPtr b, TensorPtr c, PointwiseAttr attr);
  TensorPtr reduction(TensorPtr x, ReductionAttr attr);
  // (SUM, SQ_SUM) of X per channel (dim 1), over every other dim; each [1, C, 1, ...].
  std::array<TensorPtr, 2> genstats(TensorPtr x, GenstatsAttr attr);
  TensorPtr batchnorm_inference(TensorPtr x, TensorPtr mean, TensorPtr inv_variance, TensorPtr scale,
                                TensorPtr bias, BatchnormInferenceAttr attr);
  std::array<TensorPtr, 3> layernorm(TensorPtr x, TensorPtr scale, TensorPtr bias, LayernormAttr attr);
  std::array<TensorPtr, 2> rmsnorm(TensorPtr x, TensorPtr scale, RmsnormAttr attr);
  // Composites (src/graph/adalayernorm.cpp): X's and the scale's dims must be set when called;
  // what they get wrong is validate()'s error, naming the node.
  std::array<TensorPtr, 3> adalayernorm(TensorPtr x, TensorPtr scale, TensorPtr bias, AdaLayernormAttr attr);
  std::array<TensorPtr, 3> adalayernorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                 TensorPtr inv_variance, AdaLayernormBackwardAttr attr);
  TensorPtr resample(TensorPtr x, ResampleAttr attr);
  // Training normalizations: outputs in the order of each attribute's comment. Outputs an op
  // does not produce (rmsnorm's dbias without has_dbias, batchnorm's running statistics without
  // previous ones, the INFERENCE phase's statistics) are virtual tensors that stay unused.
  std::array<TensorPtr, 3> layernorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                              TensorPtr inv_variance, LayernormBackwardAttr attr);
  std::array<TensorPtr, 3> rmsnorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr inv_rms,
                                            RmsnormBackwardAttr attr);
  // (Y, mean, inv_variance, next_running_mean, next_running_var)
  std::array<TensorPtr, 5> batchnorm(TensorPtr x, TensorPtr scale, TensorPtr bias, BatchnormAttr attr);
  std::array<TensorPtr, 3> batchnorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                              TensorPtr inv_variance, BatchnormBackwardAttr attr);
  std::array<TensorPtr, 3> instancenorm(TensorPtr x, TensorPtr scale, TensorPtr bias, InstancenormAttr attr);
  std::array<TensorPtr, 3> instancenorm_backward(TensorPtr dy, TensorPtr x, TensorPtr scale, TensorPtr mean,
                                                 TensorPtr inv_variance, InstancenormBackwardAttr attr);
  std::array<TensorPtr, 2> sdpa(TensorPtr q, TensorPtr k, TensorPtr v, SdpaAttr attr);
  // (dQ, dK, dV) from the forward's inputs, its O and Stats, and dO.
  std::array<TensorPtr, 3> sdpa_backward(TensorPtr q, TensorPtr k, TensorPtr v, TensorPtr o, TensorPtr d_o,
                                         TensorPtr stats, SdpaBackwardAttr attr);
  TensorPtr reshape(TensorPtr x, ReshapeAttr attr);
  TensorPtr transpose(TensorPtr x, TransposeAttr attr);
  TensorPtr slice(TensorPtr x, SliceAttr attr);
  TensorPtr concatenate(std::vector<TensorPtr> xs, ConcatenateAttr attr);
  // Named pointwise helpers.
  TensorPtr add(TensorPtr a, TensorPtr b);
  TensorPtr bias(TensorPtr x, TensorPtr b);
  TensorPtr mul(TensorPtr a, TensorPtr b);
  TensorPtr scale(TensorPtr x, TensorPtr s);
  TensorPtr relu(TensorPtr x);
  TensorPtr gelu(TensorPtr x);
  TensorPtr sigmoid(TensorPtr x);
  TensorPtr tanh(TensorPtr x);

  // The attributes of the tensor with this uid (a copy), as the frontend's call; uids are set by
  // set_uid or assigned by validate(). INVALID_VALUE when no tensor of the graph has it.
  Status query_tensor_attributes_of_uid(int64_t uid, TensorAttr& out) const;

  // ---- the five build steps
  Status validate();
  Status build_operation_graph(const Handle& handle);
  Status create_execution_plans(const std::vector<HeurMode>& modes);
  Status check_support(const Handle& handle);
  Status build_plans(const Handle& handle, BuildPlanPolicy policy = BuildPlanPolicy::HEURISTICS_CHOICE);

  // ---- plans
  Status get_workspace_size(int64_t& bytes) const;
  int64_t get_execution_plan_count() const;
  Status get_plan_name_at_index(int64_t index, std::string& name) const;
  Status get_workspace_size_plan_at_index(int64_t index, int64_t& bytes) const;
  Status build_plan_at_index(const Handle& handle, int64_t index);
  // The partitions, every engine's verdict on each (with reasons), and the plan list.
  std::string explain() const;

  // ---- engines by id (src/planning/engine_query.cpp), after build_operation_graph. An engine id
  // is the engine's registry id (docs/engines.md; append-only, so stable across versions);
  // cuDNN's own engine index is the `engine` knob of the cudnn engine. An engine that has no knob
  // named "kernel_cfg" is offered one: the index of a knob setting in the engine's list for this
  // graph (best guess first). Every partition of the graph (as fused before any split) must be
  // one the engine accepts: otherwise GRAPH_NOT_SUPPORTED with the engine's reason. The graph's
  // engine filters (select_engines, deselect_engines) do not apply: naming the id is the choice.
  Status get_engine_count(int64_t& count) const;  // ids run 0..count-1
  Status get_knobs_for_engine(int64_t engine_id, std::vector<EngineKnob>& knobs) const;
  // Appends one plan: every partition run by `engine_id` with the first of its knob settings that
  // holds `knobs` (or, when none does, its first setting overridden by `knobs`, checked by the
  // engine's schema). Plans made by create_execution_plans stay; a repeated plan is not added.
  Status create_execution_plan(int64_t engine_id, const std::map<std::string, int64_t>& knobs);
  // ---- the cuDNN frontend's plan filters, after create_execution_plans (src/planning/plan_filters.cpp).
  // Candidates are dropped from every partition's list (explain() says which and why); a partition
  // left with none makes check_support fail with that reason.
  Status select_behavior_notes(const std::vector<BehaviorNote>& notes);    // keep those with every note
  Status deselect_behavior_notes(const std::vector<BehaviorNote>& notes);  // drop those with any of them
  Status select_numeric_notes(const std::vector<NumericalNote>& notes);    // keep those with every note
  Status deselect_numeric_notes(const std::vector<NumericalNote>& notes);  // drop those with any of them
  // build_plans and build_plan_at_index refuse a plan whose workspace is larger (HEURISTICS_CHOICE
  // moves on to the partition's next candidate).
  Status deselect_workspace_greater_than(int64_t bytes);
  // The graph's key after build_operation_graph: equal for graphs of equal structure, dims,
  // strides, types and attributes (the plan fingerprint), for caching built graphs by it.
  Status key(int64_t& out) const;

  // The notes of the chosen plans (after build_plans), or of plan `index`, in BehaviorNote order.
  Status get_behavior_notes(std::vector<BehaviorNote>& notes) const;
  Status get_behavior_notes_for_plan_at_index(int64_t index, std::vector<BehaviorNote>& notes) const;

  // ---- execution. workspace_bytes < 0: size unknown to the caller, not checked.
  Status execute(const Handle& handle, const VariantPack& pack, void* workspace,
                 int64_t workspace_bytes = -1) const;
  Status execute(const Handle& handle, const UidVariantPack& pack, void* workspace,
                 int64_t workspace_bytes = -1) const;
  Status execute_plan_at_index(const Handle& handle, const VariantPack& pack, void* workspace,
                               int64_t index, int64_t workspace_bytes = -1) const;
  Status execute_plan_at_index(const Handle& handle, const UidVariantPack& pack, void* workspace,
                               int64_t index, int64_t workspace_bytes = -1) const;
  // Time every built plan, make the fastest the default and record it in the tuning DB.
  Status autotune(const Handle& handle, const VariantPack& pack, void* workspace);
  Status autotune(const Handle& handle, const UidVariantPack& pack, void* workspace);
  // CUDA graphs: cuda_graph is a cudaGraph_t made by the caller.
  Status populate_cuda_graph(const Handle& handle, const VariantPack& pack, void* workspace,
                             void* cuda_graph) const;
  Status update_cuda_graph(const Handle& handle, const VariantPack& pack, void* workspace,
                           void* cuda_graph) const;

  // ---- persistence
  Status serialize(std::vector<uint8_t>& bytes) const;
  Status deserialize(const Handle& handle, const std::vector<uint8_t>& bytes);
  std::string to_json() const;                               // the graph, in docs/graph-json.md's format
  static Status from_json(const std::string& json, Graph& graph);

  // The library's own layers reach the internals through this (src/graph/graph_impl.hpp).
  friend GraphImpl& impl_of(const Graph& g);

 private:
  std::unique_ptr<GraphImpl> impl_;
};

}  // namespace dnngraph
DNNGRAPH_API_END
