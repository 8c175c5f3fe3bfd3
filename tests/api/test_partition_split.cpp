// Split on rejection: a fused partition that only ref accepts is split so faster engines take the
// pieces: anchor + epilogue first (the epilogue stays one kernel), single nodes otherwise.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/partitions.hpp"
#include "common/random_data.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"

namespace dg = dnngraph;

namespace {

constexpr int64_t kM = 7, kK = 9, kN = 5;

struct Chain {
  dg::Graph g;
  dg::TensorPtr a, b, bias, y;
};

// Y = epilogue(A @ B + bias): gelu when `gelu`, else no pointwise after the bias.
void make_chain(Chain& c, bool gelu, std::vector<std::string> engines) {
  c.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  c.a = c.g.tensor(dg::TensorAttr().set_name("A").set_dim({1, kM, kK}).set_stride({kM * kK, kK, 1}));
  c.b = c.g.tensor(dg::TensorAttr().set_name("B").set_dim({1, kK, kN}).set_stride({kK * kN, kN, 1}));
  c.bias = c.g.tensor(dg::TensorAttr().set_name("bias").set_dim({1, 1, kN}).set_stride({kN, kN, 1}));
  auto mm = c.g.matmul(c.a, c.b, dg::MatmulAttr().set_name("mm"));
  c.y = c.g.bias(mm, c.bias);
  if (gelu) c.y = c.g.gelu(c.y);
  c.y->set_output(true).set_name("Y");
  c.g.select_engines(std::move(engines));
}

const dg::PlanSet& plans(const dg::Graph& g) { return *impl_of(g).plans; }

// Builds and runs the chain on NaN-poisoned output; returns Y.
std::vector<float> run(Chain& c, const dg::Handle& h, const std::vector<float>& a, const std::vector<float>& b,
                       const std::vector<float>& bias) {
  std::vector<float> y(kM * kN, std::nanf(""));
  EXPECT_TRUE(c.g.validate().ok());
  EXPECT_TRUE(c.g.build_operation_graph(h).ok());
  EXPECT_TRUE(c.g.create_execution_plans({dg::HeurMode::A}).ok());
  EXPECT_TRUE(c.g.check_support(h).ok()) << c.g.explain();
  EXPECT_TRUE(c.g.build_plans(h).ok());
  int64_t ws = 0;
  EXPECT_TRUE(c.g.get_workspace_size(ws).ok());
  std::vector<uint8_t> workspace(static_cast<size_t>(ws) + 1);
  dg::VariantPack pack{{c.a, const_cast<float*>(a.data())}, {c.b, const_cast<float*>(b.data())},
                       {c.bias, const_cast<float*>(bias.data())}, {c.y, y.data()}};
  EXPECT_TRUE(c.g.execute(h, pack, workspace.data(), ws).ok());
  return y;
}

class PartitionSplit : public testing::Test {
 protected:
  void SetUp() override {
    test_random::UniformFloats u(11);
    a_ = u.take(kM * kK);
    b_ = u.take(kK * kN);
    bias_ = u.take(kN);
  }
  void expect_matches_ref(Chain& c, bool gelu) {
    Chain ref;
    make_chain(ref, gelu, {"ref"});
    const auto want = run(ref, cpu_, a_, b_, bias_);
    const auto got = run(c, cpu_, a_, b_, bias_);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  }
  dg::Handle cpu_{dg::Device::cpu()};
  std::vector<float> a_, b_, bias_;
};

TEST_F(PartitionSplit, EpilogueStaysOnePartitionWhenOnlyTheAnchorNeedsRef) {
  Chain c;
  make_chain(c, true, {"ref", "cpu_pointwise_fused"});  // no engine here fuses a matmul
  expect_matches_ref(c, true);
  const auto& ps = plans(c.g);
  ASSERT_EQ(ps.parts.size(), 2u) << c.g.explain();
  EXPECT_EQ(ps.parts[0].partition.pattern, "split:matmul");
  EXPECT_EQ(ps.parts[1].partition.pattern, "split:epilogue");
  EXPECT_EQ(ps.parts[1].partition.nodes.size(), 2u);
  EXPECT_NE(ps.parts[1].candidates.front().engine_id, 0) << c.g.explain();
  // explain() keeps why the fused form was split.
  EXPECT_NE(c.g.explain().find("fused "), std::string::npos) << c.g.explain();
}

TEST_F(PartitionSplit, TwoNodePartitionSplitsPerNode) {
  Chain c;
  make_chain(c, false, {"ref", "cpu_pointwise_fused"});
  expect_matches_ref(c, false);
  const auto& ps = plans(c.g);
  ASSERT_EQ(ps.parts.size(), 2u) << c.g.explain();
  EXPECT_EQ(ps.parts[1].partition.pattern, "split:pointwise");
}

TEST_F(PartitionSplit, RefOnlyGraphIsNotSplit) {
  Chain c;
  make_chain(c, true, {"ref"});
  expect_matches_ref(c, true);
  EXPECT_EQ(plans(c.g).parts.size(), 1u) << c.g.explain();
}

}  // namespace

// Partitions that compute the same thing at different places of a graph share a structural
// fingerprint; a different shape, stride, attribute or op does not.
TEST(StructuralFingerprint, EqualForTheSameProblemAnywhereInTheGraph) {
  auto block = [](dg::Graph& g, dg::TensorPtr x, int64_t k, int64_t pad, bool gelu) {
    auto w = g.tensor(dg::TensorAttr().set_dim({k, 8, 3, 3}).set_stride({72, 1, 24, 8}));
    auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({pad, pad}).set_stride({1, 1}).set_dilation({1, 1}));
    return gelu ? g.gelu(y) : g.relu(y);
  };
  test_partitions::Parts parts;
  test_partitions::partition_on_cpu(
      [&](dg::Graph& g) {
        g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
        auto x = [&] { return g.tensor(dg::TensorAttr().set_dim({2, 8, 10, 10}).set_stride({800, 1, 80, 8})); };
        block(g, x(), 8, 1, false)->set_output(true);   // 0
        block(g, x(), 8, 1, false)->set_output(true);   // 1: the same problem, other tensors
        block(g, x(), 16, 1, false)->set_output(true);  // 2: more filters
        block(g, x(), 8, 0, false)->set_output(true);   // 3: no padding
        block(g, x(), 8, 1, true)->set_output(true);    // 4: GELU
        auto t = g.tensor(dg::TensorAttr().set_dim({2, 8, 10, 10}).set_stride({800, 100, 10, 1}));
        block(g, t, 8, 1, false)->set_output(true);     // 5: NCHW input
      },
      parts);
  ASSERT_EQ(parts.parts.size(), 6u);
  std::vector<uint64_t> f;
  for (const auto& p : parts.parts) f.push_back(dg::structural_fingerprint(p));
  EXPECT_EQ(f[0], f[1]);
  for (size_t i = 2; i < f.size(); ++i) EXPECT_NE(f[0], f[i]) << "partition " << i;
}
