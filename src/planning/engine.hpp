// The engine contract. An engine is stateless and const; its registry id is append-only (ids key
// tuning records and serialized plans). check() says why when it says no.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.hpp"
#include "dnngraph/graph.hpp"
#include "dnngraph/status.hpp"
#include "fusion/partition.hpp"
#include "planning/knobs.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph {

struct KernelCacheImpl;

struct Target {
  HandleImpl* handle = nullptr;  // device, stream, info, thread pool
  bool dynamic_shapes = false;
  KernelCacheImpl* kernel_cache = nullptr;  // may be null: compile without caching
  // The heuristic modes the plans are made for (create_execution_plans'): an engine with heuristics
  // of its own (cudnn) offers the configs of those modes only. Empty: every mode.
  std::vector<HeurMode> heur_modes;
  const DeviceInfo& info() const { return handle->info; }
  const Device& device() const { return handle->device; }
};

struct Support {
  bool ok = false;
  std::string reason;
  static Support yes() { return {true, {}}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

struct ExecArgs {
  HandleImpl& handle;
  // By IR tensor id: device pointers for tensors, host pointers for pass-by-value scalars, null for
  // tensors internal to the partition (engines keep those in their workspace or registers).
  const std::vector<void*>& ptrs;
  void* workspace;  // workspace_size() bytes, on the device
};

class Plan {
 public:
  virtual ~Plan() = default;
  virtual int64_t workspace_size() const { return 0; }
  // Thread-safe: one plan may run from several threads at once.
  virtual Status execute(const ExecArgs& args) const = 0;
  // Engine-specific payload (e.g. compiled kernel binaries) that Engine::deserialize reads back.
  virtual void serialize(ByteWriter&) const {}
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  virtual Support check(const Partition& p, const Target& t) const = 0;
  // Candidate knob settings, best guess first. Most engines have one.
  virtual std::vector<Knobs> knob_space(const Partition&, const Target&) const { return {Knobs{}}; }
  // Whether `k` is a knob setting this engine understands (its KnobSchema's rules), whatever the
  // partition: how a tuning DB record or a serialized plan is checked before it is used.
  virtual Status check_knobs(const Knobs& k) const {
    if (k.empty()) return {};
    return {ErrorCode::INVALID_VALUE, std::string(name()) + " takes no knobs, got " + knobs_to_string(k)};
  }
  // Predicted run time, for heuristic mode A.
  virtual double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const = 0;
  virtual Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const = 0;
  // Behaviour notes of the plan that knobs `k` would build, beyond what the engine's name says
  // (engine_query.cpp: cuda_* engines compile with NVRTC, cublaslt needs cuBLASLt): a vendor
  // engine passes on what its library reports for that config (cuDNN's RUNTIME_COMPILATION).
  virtual std::vector<BehaviorNote> behavior_notes(const Partition&, const Target&, const Knobs&) const { return {}; }
  // Numerical notes of the plan that knobs `k` would build (graph.hpp says which apply where).
  virtual std::vector<NumericalNote> numerical_notes(const Partition&, const Target&, const Knobs&) const { return {}; }
  // Whether the plan knobs `k` build for `p` stays correct when its output tensor `out` lies at
  // exactly the address of its input tensor `in` (same type, dims and strides; nothing after the
  // partition reads the input): SAFE where it reads each element of `in` before writing that
  // element of `out`, or detects the alias and copies; FAST where it does so at no cost. The
  // planner gives such an output its input's bytes only where every candidate is at least SAFE
  // and the first is FAST: a residual add's output over the residual, one stream of memory
  // traffic fewer (planning/intermediate_layout.cpp).
  enum class Alias { NO, SAFE, FAST };
  virtual Alias output_alias(const Partition&, const Knobs&, int /*out*/, int /*in*/) const { return Alias::NO; }
  // Whether build() may run on several threads at once (for different partitions or knobs).
  // build_plans builds such candidates concurrently (the own CUDA engines' NVRTC compiles, the
  // cudnn engine's runtime-compiled configs on a handle each); the others (CPU engines) are built
  // one after another on the caller's thread.
  virtual bool builds_concurrently() const { return false; }
  // Whether build() generates and compiles a kernel of its own through the kernel cache (the own
  // CUDA engines): such builds can be probed for a cached or shipped kernel (KernelPresenceProbe)
  // and shipped ahead of time.
  virtual bool compiles_kernels() const { return false; }
  // Rebuilds a plan from Plan::serialize's payload, without compiling. Default: build again.
  virtual Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader&,
                             std::unique_ptr<Plan>& plan) const {
    return build(p, t, k, plan);
  }
};

// How build() reports a partition check() would reject: GRAPH_NOT_SUPPORTED, "<engine>: <why>".
inline Status unsupported(std::string_view engine, const std::string& why) {
  return {ErrorCode::GRAPH_NOT_SUPPORTED, std::string(engine) + ": " + why};
}

struct RegisteredEngine {
  int id;
  const Engine* engine;
};
// Every engine, in id order. Built once.
const std::vector<RegisteredEngine>& engine_registry();
const Engine* engine_by_id(int id);
int engine_id_by_name(std::string_view name);  // -1 if unknown

// Roofline helper for estimate_seconds: max(flops / (peak * efficiency), bytes / bandwidth) + launch.
double roofline_seconds(double flops, double bytes, const DeviceInfo& info, double efficiency,
                        double launch_seconds);
// FLOPs and minimum bytes moved by a partition (inputs read once, outputs written once).
double partition_flops(const Partition& p);
double partition_bytes(const Partition& p);

}  // namespace dnngraph
