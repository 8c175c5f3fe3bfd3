// A graph lowered on the CPU and cut into its partitions, kept together: the partitions point into
// the graph's IR. For tests that ask an engine about a partition without planning the graph.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"

namespace test_partitions {

struct Parts {
  dnngraph::Graph g;
  std::vector<dnngraph::Partition> parts;
};

inline void partition_on_cpu(const std::function<void(dnngraph::Graph&)>& build, Parts& out) {
  build(out.g);
  dnngraph::Handle cpu(dnngraph::Device::cpu());
  ASSERT_TRUE(out.g.validate().ok());
  ASSERT_TRUE(out.g.build_operation_graph(cpu).ok());
  ASSERT_TRUE(dnngraph::partition_graph(*impl_of(out.g).ir, out.parts).ok());
}

}  // namespace test_partitions
