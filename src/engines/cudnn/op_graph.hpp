// The cuDNN operation graph of a lowered partition, cuDNN's heuristics over it (engine configs:
// an engine's global index plus its knob choices), and execution plans made from one config or
// from cuDNN's own JSON representation of a plan.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engines/cudnn/lower.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cudnn {

struct OpGraph {
  Lowered lowered;
  std::shared_ptr<Descriptor> graph;  // finalized CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
  bool dynamic = false;               // built with dynamic shapes enabled
};

// Lowers the partition and finalizes its operation graph on `handle`.
Status build_op_graph(const CudnnApi& api, cudnnHandle_t handle, const Partition& p, bool dynamic, OpGraph& out);

struct EngineConfig {
  int64_t engine = -1;                          // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  std::vector<std::pair<int, int64_t>> knobs;   // (cudnnBackendKnobType_t, value)
  bool runtime_compiled = false;                // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
  bool nondeterministic = false;                // CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC
  bool tensor_core = false;                     // CUDNN_NUMERICAL_NOTE_TENSOR_CORE (TF32 for FLOAT inputs)
  bool down_convert = false;                    // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
  std::vector<int> numerical_notes;             // every cudnnBackendNumericalNote_t it reports (below TYPE_COUNT)
  bool needs_reorder = false;                   // INT8x32 filter/bias reordering, which dnngraph does not do
  bool cuda_graph_native = false;               // CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API (cuDNN 9.5+)
};

// Knob names in dnngraph's candidate lists: the engine index, then "k_" + cuDNN's knob name.
inline constexpr const char* kEngineKnob = "cudnn_engine";
Knobs to_knobs(const EngineConfig& c);
bool from_knobs(const Knobs& k, EngineConfig& c, std::string& why);

// cuDNN's engine configs for the graph under one heuristic mode, in cuDNN's order, appended to
// `out` where not already there.
Status heuristic_configs(const CudnnApi& api, const Descriptor& graph, HeurMode mode, std::vector<EngineConfig>& out);

// A finalized execution plan and the descriptors it was made from.
struct PlanDescriptors {
  std::shared_ptr<Descriptor> plan;
  DescriptorList parts;
  int64_t workspace = 0;
};

// The engine config from its index and knobs, then the execution plan (with a kernel cache when
// one is given).
Status make_plan(const CudnnApi& api, cudnnHandle_t handle, const Descriptor& graph, const EngineConfig& c,
                 BackendDescriptor kernel_cache, PlanDescriptors& out);
// cuDNN's serialized form of a plan (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION), and back.
Status plan_to_json(const CudnnApi& api, const Descriptor& plan, std::string& json);
Status plan_from_json(const CudnnApi& api, cudnnHandle_t handle, const std::string& json, PlanDescriptors& out);

}  // namespace dnngraph::cudnn
