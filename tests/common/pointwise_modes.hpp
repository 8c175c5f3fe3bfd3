// Every pointwise mode, for tests that hold each one against ref: counted from the list itself,
// so a mode appended to pointwise_modes.def is tested without editing the tests.
#pragma once
#include <vector>

#include "dnngraph/types.hpp"

namespace test_modes {

inline std::vector<dnngraph::PointwiseMode> all_pointwise_modes() {
  std::vector<dnngraph::PointwiseMode> modes;
#define DG_POINTWISE_MODE(mode, inputs, kind, python, kw0, kw1) modes.push_back(dnngraph::PointwiseMode::mode);
#include "dnngraph/pointwise_modes.def"
#undef DG_POINTWISE_MODE
  return modes;
}

}  // namespace test_modes
