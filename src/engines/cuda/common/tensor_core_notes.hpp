// The numerical notes of an own CUDA engine whose products run on tensor cores (mma.sync or
// wgmma): TENSOR_CORE, and DOWN_CONVERT_INPUTS where its FLOAT inputs run as TF32 (they take
// FLOAT only when the graph allows TF32).
#pragma once
#include <vector>

#include "planning/calibration.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cuda {

inline std::vector<NumericalNote> tensor_core_notes(const Partition& p) {
  if (operand_precision(p) == Precision::TF32) return {NumericalNote::TENSOR_CORE, NumericalNote::DOWN_CONVERT_INPUTS};
  return {NumericalNote::TENSOR_CORE};
}

}  // namespace dnngraph::cuda
