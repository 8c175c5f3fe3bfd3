// Pure pointwise partitions of one domain that read the same tensors are merged into one
// (src/fusion/pointwise_merge.cpp), unless that would make a cycle through another partition.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/partitions.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using test_partitions::Parts;
using test_partitions::partition_on_cpu;

namespace {

dg::TensorPtr input(dg::Graph& g, const char* name, std::vector<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides));
}

dg::TensorPtr mul(dg::Graph& g, dg::TensorPtr a, dg::TensorPtr b, const char* name) {
  return g.pointwise(std::move(a), std::move(b), dg::PointwiseAttr().set_mode(dg::PointwiseMode::MUL).set_name(name));
}

std::vector<std::string> node_names(const dg::Partition& p) {
  std::vector<std::string> out;
  for (size_t i = 0; i < p.nodes.size(); ++i) out.push_back(p.node(i).name);
  return out;
}

}  // namespace

TEST(PointwiseMerge, SiblingsThatReadTheSameTensorsAreOnePartition) {
  // apply_rope's halves: Y1 = x1*c1 - x2*s1, Y2 = x2*c2 + x1*s2.
  Parts p;
  partition_on_cpu([](dg::Graph& g) {
    g.set_io_data_type(dg::DataType::FLOAT);
    auto x1 = input(g, "x1", {2, 8}), x2 = input(g, "x2", {2, 8});
    auto c1 = input(g, "c1", {1, 8}), c2 = input(g, "c2", {1, 8}), s1 = input(g, "s1", {1, 8}), s2 = input(g, "s2", {1, 8});
    auto a = mul(g, x1, c1, "a"), b = mul(g, x2, c2, "b"), c = mul(g, x2, s1, "c"), d = mul(g, x1, s2, "d");
    g.pointwise(a, c, dg::PointwiseAttr().set_mode(dg::PointwiseMode::SUB).set_name("y1"))->set_output(true);
    g.pointwise(b, d, dg::PointwiseAttr().set_mode(dg::PointwiseMode::ADD).set_name("y2"))->set_output(true);
  }, p);
  ASSERT_EQ(p.parts.size(), 1u);
  EXPECT_EQ(node_names(p.parts[0]), (std::vector<std::string>{"a", "b", "c", "d", "y1", "y2"}));
  EXPECT_EQ(p.parts[0].pattern, "pointwise_chain");
}

TEST(PointwiseMerge, ChainsOfOtherDomainsStayApart) {
  Parts p;
  partition_on_cpu([](dg::Graph& g) {
    g.set_io_data_type(dg::DataType::FLOAT);
    auto x = input(g, "x", {2, 8}), s = input(g, "s", {1, 8});
    mul(g, x, x, "square")->set_output(true);
    mul(g, s, s, "small")->set_output(true);  // reads neither x nor a result of the first, and is [1, 8]
    mul(g, x, s, "scaled")->set_output(true);
  }, p);
  ASSERT_EQ(p.parts.size(), 2u);
  EXPECT_EQ(node_names(p.parts[0]), (std::vector<std::string>{"square", "scaled"}));
  EXPECT_EQ(node_names(p.parts[1]), (std::vector<std::string>{"small"}));
}

TEST(PointwiseMerge, NoMergeThroughAnotherPartition) {
  // relu(x) feeds a matmul (with its terminal reduction); q = sum * x reads that sum and is a
  // sibling of relu by x, in the same domain: merged, the partition would feed the matmul's and
  // read from it. They stay apart, in dependency order.
  Parts p;
  partition_on_cpu([](dg::Graph& g) {
    g.set_io_data_type(dg::DataType::FLOAT);
    auto x = input(g, "x", {1, 4, 4});
    auto r = g.pointwise(x, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"));
    auto m = g.matmul(r, input(g, "w", {1, 4, 4}), dg::MatmulAttr().set_name("mm"));
    auto sum = g.reduction(m, dg::ReductionAttr().set_mode(dg::ReductionMode::ADD).set_name("sum"));
    sum->set_dim({1, 4, 1});
    mul(g, sum, x, "q")->set_output(true);
  }, p);
  ASSERT_EQ(p.parts.size(), 3u);
  EXPECT_EQ(node_names(p.parts[0]), (std::vector<std::string>{"relu"}));
  EXPECT_EQ(node_names(p.parts[1]), (std::vector<std::string>{"mm", "sum"}));
  EXPECT_EQ(node_names(p.parts[2]), (std::vector<std::string>{"q"}));
}

TEST(PointwiseMerge, AGroupPastTheNodeLimitIsLeftAsItIs) {
  // 300 ReLUs of one input: one group of siblings, too large for one loop (kMaxMergedNodes 256).
  Parts p;
  partition_on_cpu([](dg::Graph& g) {
    g.set_io_data_type(dg::DataType::FLOAT);
    auto x = input(g, "x", {4, 4});
    for (int i = 0; i < 300; ++i)
      g.pointwise(x, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD))->set_output(true);
  }, p);
  EXPECT_EQ(p.parts.size(), 300u);
}
