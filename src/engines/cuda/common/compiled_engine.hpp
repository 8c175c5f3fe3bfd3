// The frame of the CUDA engines, which compile their kernels with NVRTC and have typed knobs T:
// check_knobs is their schema's (planning/knobs.hpp), build() compiles and deserialize() reloads
// the stored kernels through one make() (r null: compile), and knob_space() lists typed settings
// printed by the schema, best estimate first. build() and deserialize() report a setting the
// schema rejects under their own error code (plan creation, serialization) with the schema's
// message (engine, knob, range or rule).
#pragma once
#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include "planning/engine.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda {

// check()'s answer for an engine that compiles with NVRTC once its partition is prepared.
inline Support compile_support(const Status& prepared) {
  if (!prepared.ok()) return Support::no(prepared.message());
  if (!nvrtc()) return Support::no(nvrtc_error());
  return Support::yes();
}

template <class T>
Status read_knobs(const KnobSchema<T>& schema, const Knobs& k, ErrorCode code, T& out) {
  Status s = schema.parse(k, out);
  if (s.ok()) return s;
  return {code, s.message()};
}

template <class T>
std::vector<Knobs> print_knobs(const KnobSchema<T>& schema, const std::vector<T>& settings) {
  std::vector<Knobs> out;
  for (const T& s : settings) out.push_back(schema.print(s));
  return out;
}

template <class T>
class CompiledEngine : public Engine {
 public:
  explicit CompiledEngine(const KnobSchema<T>& schema) : schema_(schema) {}

  Status check_knobs(const Knobs& k) const final { return schema_.validate(k); }

  // Generating source, compiling it with NVRTC (thread-safe) through the process-wide kernel cache
  // (locked) and loading the module (make_current on the building thread) share no state.
  bool builds_concurrently() const final { return true; }
  bool compiles_kernels() const final { return true; }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const final {
    return make(p, t, k, nullptr, plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const final {
    return make(p, t, k, &r, plan);
  }

 protected:
  virtual Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
                      std::unique_ptr<Plan>& plan) const = 0;

  // The settings as knob_space lists them: printed, best estimate first (ties keep their order).
  std::vector<Knobs> ranked(const Partition& p, const Target& t, const std::vector<T>& settings) const {
    std::vector<Knobs> out = print_knobs(schema_, settings);
    std::stable_sort(out.begin(), out.end(), [&](const Knobs& a, const Knobs& b) {
      return estimate_seconds(p, t, a) < estimate_seconds(p, t, b);
    });
    return out;
  }

  // Whether an estimate can read k (an estimate of a rejected setting is 1e9).
  bool parse(const Knobs& k, T& out) const { return schema_.parse(k, out).ok(); }

  // The error code under which make() reports a rejected setting.
  static ErrorCode knob_error(const ByteReader* r) {
    return r ? ErrorCode::SERIALIZATION_FAILED : ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED;
  }

  const KnobSchema<T>& schema_;
};

// A compiled engine named `name` that supports a partition when `prepare` can describe it
// (filling the engine's Pieces) and NVRTC loads.
template <class T, class Pieces, Status (*prepare)(const Partition&, const Target&, Pieces&)>
class PreparedEngine : public CompiledEngine<T> {
 public:
  PreparedEngine(std::string_view name, const KnobSchema<T>& schema) : CompiledEngine<T>(schema), name_(name) {}

  std::string_view name() const final { return name_; }

  Support check(const Partition& p, const Target& t) const final {
    Pieces pc;
    return compile_support(prepare(p, t, pc));
  }

 private:
  std::string_view name_;
};

}  // namespace dnngraph::cuda
