// The names of a graph's candidate plans, in list order (each lookup checked).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dnngraph/dnngraph.hpp"

namespace test_build {

inline std::vector<std::string> plan_names(const dnngraph::Graph& g) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string n;
    EXPECT_TRUE(g.get_plan_name_at_index(i, n).ok());
    names.push_back(n);
  }
  return names;
}

}  // namespace test_build
