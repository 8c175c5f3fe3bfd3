// cudnn: the vendor engine over cuDNN's backend API (dlopen'ed; see cudnn_api.hpp for the search
// order). A partition (a conv_fprop or matmul with its pointwise epilogue, or an sdpa node: what
// was checked against ref on a GPU; lower.hpp says what else is lowered and why it is held back)
// is lowered to a cuDNN operation graph (sdpa_lower.hpp for attention); every engine config that
// cuDNN's heuristics offer, in the modes the plans are made for (Target::heur_modes: the user's
// create_execution_plans modes, as NVIDIA's frontend asks cuDNN), becomes one candidate, with knobs
// {cudnn_engine: <global index>, k_<knob>: <value>...}, so autotune times cuDNN's plans beside
// dnngraph's own. Plans serialize as cuDNN's own JSON representation; they run on the handle's
// stream, replayed as CUDA graphs, one per pointer set that repeats (graph_cache.hpp,
// native_graph.hpp), and inside CUDA graph captures; dynamic-shape graphs share a cuDNN kernel
// cache per dnngraph KernelCache. A partition cuDNN rejects carries cuDNN's reason.
#pragma once
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cudnn {

const Engine& engine();
// How a cudnn plan launches: "native CUDA graph (...)", "captured CUDA graph of ..." (with the
// number of pointer sets it holds graphs for) or "cudnnBackendExecute (why)"; settled when the
// plan makes its first graph (before it, the one to be tried).
std::string launch_path(const Plan& plan);

}  // namespace dnngraph::cudnn
