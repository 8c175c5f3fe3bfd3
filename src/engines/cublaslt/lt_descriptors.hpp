// cuBLASLt descriptors of one LtProblem (matmul descriptor, four layouts, the heuristic
// preference), owned together, and the algorithm configurations as dnngraph knobs.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "dnngraph/status.hpp"
#include "engines/cublaslt/lt_problem.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cublaslt {

// Workspace cuBLASLt may use (its documented recommendation for Hopper).
inline constexpr uint64_t kMaxWorkspace = 32ull << 20;
// Pointer alignment promised to cuBLASLt; execute() checks it.
inline constexpr uint32_t kAlignment = 16;

Status lt_error(const LtApi& api, cublasStatus_t s, const std::string& what,
                ErrorCode code = ErrorCode::GRAPH_NOT_SUPPORTED);

struct LtDescriptors {
  const LtApi* api = nullptr;
  MatmulDesc desc = nullptr;
  MatrixLayout a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  Preference pref = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors();
};

// Creates every descriptor of the problem (no GPU needed). With `placeholder_amax`, the AMAX
// pointer is set to a stand-in so that the heuristics pick kernels that compute it.
Status make_descriptors(const LtApi& api, const LtProblem& p, bool placeholder_amax, LtDescriptors& out);

// An algorithm's configuration as knobs: algo, tile, stages always; split-k, reduction, swizzle,
// custom, inner_shape, cluster where not 0/1 defaults.
Knobs algo_knobs(const LtApi& api, const MatmulAlgo& algo);
// Whether knobs could name an algorithm: "algo" present, every name a configuration attribute,
// every value in its attribute's range. Needs no cuBLASLt (tuning DB records are checked with it).
Status check_algo_knobs(const Knobs& k);
// An algorithm from its knobs (cublasLtMatmulAlgoInit + the configuration attributes).
Status algo_from_knobs(const LtApi& api, LtHandle h, const LtProblem& p, const Knobs& k, MatmulAlgo& out);

// The cuBLASLt handle of a CUDA context: made on first use, kept for the process.
struct SharedLtHandle {
  LtHandle handle = nullptr;
  std::mutex mutex;
};
Status shared_lt_handle(const LtApi& api, HandleImpl& h, SharedLtHandle*& out);

}  // namespace dnngraph::cublaslt
