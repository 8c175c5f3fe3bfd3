#include "fusion/patterns.hpp"

namespace dnngraph {

const std::vector<FusionPattern>& fusion_patterns() {
  static const std::vector<FusionPattern> kPatterns{
      {"conv_epilogue", "conv_fprop|conv_dgrad -> pointwise* (bias, residual, activation, cast) -> [reduction]",
       {"conv_fprop", "conv_dgrad"}, true, true, 30},
      {"matmul_epilogue", "matmul -> pointwise* (scale, bias, activation, cast) -> [reduction]", {"matmul"}, true, true, 30},
      {"sdpa", "sdpa -> pointwise*", {"sdpa"}, true, false, 30},
      {"norm_epilogue", "layernorm|rmsnorm|batchnorm_inference -> pointwise*",
       {"layernorm", "rmsnorm", "batchnorm_inference"}, true, false, 20},
      {"pointwise_chain", "pointwise+ -> [reduction]", {}, true, true, 10},
      {"reduction", "reduction", {"reduction"}, false, false, 5},
      {"single_op", "any other op alone (conv_wgrad, resample, reshape, transpose, slice, concatenate)",
       {"conv_wgrad", "resample", "reshape", "transpose", "slice", "concatenate"}, false, false, 0},
  };
  return kPatterns;
}

}  // namespace dnngraph
