// How the CUDA engines use their knob schemas (planning/knobs.hpp): build() and deserialize()
// report a setting the schema rejects under their own error code (plan creation, serialization)
// with the schema's message (engine, knob, range or rule), and knob_space() lists typed settings
// printed by the schema, best estimate first.
#pragma once
#include <algorithm>
#include <vector>

#include "planning/engine.hpp"

namespace dnngraph::cuda {

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

// Stable: settings the estimate ties keep their order.
inline void sort_by_estimate(const Engine& e, const Partition& p, const Target& t, std::vector<Knobs>& settings) {
  std::stable_sort(settings.begin(), settings.end(), [&](const Knobs& a, const Knobs& b) {
    return e.estimate_seconds(p, t, a) < e.estimate_seconds(p, t, b);
  });
}

}  // namespace dnngraph::cuda
