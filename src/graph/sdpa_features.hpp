// The optional features an sdpa or sdpa_backward node of the IR uses, for engines that implement
// only some: each names what it refuses with this list (defined in src/graph/sdpa_inputs.cpp).
#pragma once
#include <string>

#include "graph/ir.hpp"

namespace dnngraph {

struct SdpaFeatures {
  bool bias = false, alibi = false, dropout = false, ragged = false, paged = false, kv_heads_differ = false;
  bool any() const { return bias || alibi || dropout || ragged || paged || kv_heads_differ; }
};

SdpaFeatures sdpa_features(const ir::Graph& g, const ir::Node& n);
// "a bias, ALiBi, dropout": the features of `f` that `supported` lacks, in words ("" when none).
std::string sdpa_features_missing(const SdpaFeatures& f, const SdpaFeatures& supported);

}  // namespace dnngraph
