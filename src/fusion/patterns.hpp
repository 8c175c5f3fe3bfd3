// Fusion patterns, declared as data: which ops anchor a partition and what may join it.
#pragma once
#include <string_view>
#include <vector>

namespace dnngraph {

struct FusionPattern {
  std::string_view name;
  std::string_view diagram;            // one line, for docs and --explain
  std::vector<std::string_view> anchors;  // op names that start the pattern; empty: starts at a pointwise op
  bool epilogue;                       // pointwise consumers may join
  bool terminal_reduction;             // a reduction may end it (AMAX of the output, ...)
  int priority;                        // higher patterns claim nodes first
};

const std::vector<FusionPattern>& fusion_patterns();

}  // namespace dnngraph
