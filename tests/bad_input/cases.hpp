// The generator of extreme and malformed graphs: each case is a graph (built in C++, or JSON text
// where the builder cannot express the fault) and what dnngraph must do with it: refuse it with a
// code and a message naming the node or tensor and the rule, or run it and agree with ref. The
// cases are drawn from fixed seeds, so every run sees the same ones.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"

namespace bad_input {

namespace dg = dnngraph;
using Dims = std::vector<int64_t>;
// Every tensor's dims, strides, elements and span bytes, and every conv and pooling parameter,
// are at most this (core/checked.hpp).
inline constexpr int64_t kLimit = int64_t{1} << 48;
// The verdicts are computed in 128 bits, where no product of two int64 values wraps.
__extension__ typedef __int128 Wide;

enum class Verdict {
  REJECTED,    // a Status with `code`, naming `names`, with `rule` in its message
  RUNS,        // every step passes, and the CPU engines agree with ref on real buffers
  PLANS_ONLY,  // every build step passes; too large to execute here
};

struct Expect {
  Verdict verdict = Verdict::RUNS;
  dnngraph::ErrorCode code = dnngraph::ErrorCode::OK;
  std::string names;  // "node 'relu'", "tensor 'X'", ...
  std::string rule;   // a piece of the rule's wording
};

inline Expect rejected(dnngraph::ErrorCode code, std::string names, std::string rule) {
  return {Verdict::REJECTED, code, std::move(names), std::move(rule)};
}
inline Expect runs() { return {}; }
inline Expect plans_only() { return {Verdict::PLANS_ONLY, dnngraph::ErrorCode::OK, {}, {}}; }

struct Case {
  Case(std::string n, std::function<void(dnngraph::Graph&)> b, std::string j, Expect e, bool via_json = true)
      : name(std::move(n)), build(std::move(b)), json(std::move(j)), expect(std::move(e)), through_json(via_json) {}

  std::string name;                             // letters, digits and '_' (a gtest name)
  std::function<void(dnngraph::Graph&)> build;  // a graph built in C++ ...
  std::string json;                             // ... or JSON text, when build is empty
  Expect expect;
  bool through_json = true;  // false only where the JSON reader is not the point and too slow
  // What the JSON path must give, where the reader words the same fault its own way (or the
  // writer cannot express it: a null concatenate input is left out).
  std::optional<Expect> json_expect;
};

// The families, each appending its cases (shapes: dims, strides, spans, output layouts; geometry:
// conv, pooling, resizing; layout: reshape, slice, transpose, concatenate; graph: uids,
// pass-by-value, ranks, types, missing inputs, cycles, duplicated outputs, JSON-only faults).
void add_shape_cases(std::vector<Case>& cases);
void add_geometry_cases(std::vector<Case>& cases);
void add_layout_cases(std::vector<Case>& cases);
void add_graph_cases(std::vector<Case>& cases);

// Every case, names unique.
std::vector<Case> all_cases();

// Packed row-major strides, saturating at INT64_MAX where the product overflows (so that dims
// near 2^63 still get strides to be judged by).
Dims packed_strides(const Dims& dims);

// A user tensor of the given layout.
dnngraph::TensorPtr user_tensor(dnngraph::Graph& g, const std::string& name, const Dims& dims, const Dims& strides,
                                dnngraph::DataType type = dnngraph::DataType::FLOAT);

// "node 'relu' (pointwise)": how messages name a node.
std::string node_named(const std::string& name, const std::string& op);
// "tensor 'X'": how messages name a tensor.
std::string tensor_named(const std::string& name);

}  // namespace bad_input
