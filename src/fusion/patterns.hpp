// Fusion patterns, declared as data: what may join a partition that an op anchors or starts. Which
// ops anchor which pattern is each op's own trait (OpTraits::fusion_pattern).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dnngraph {

struct FusionPattern {
  std::string_view name;
  std::string_view joins;        // what follows the anchor, for the one-line diagram
  bool epilogue;                 // pointwise consumers may join
  bool terminal_reduction;       // a reduction may end it (AMAX of the output, ...)
  bool anchored;                 // its first op keeps the partition's anchor (pointwise chains have none)
};

const std::vector<FusionPattern>& fusion_patterns();
// The pattern an op anchors or starts; null for ops that stand alone.
const FusionPattern* pattern_named(std::string_view name);
// "conv_fprop|conv_dgrad -> pointwise* (...) -> [reduction]": the ops whose trait names the pattern,
// then what joins them.
std::string pattern_diagram(const FusionPattern& p);

}  // namespace dnngraph
