// serialize / deserialize: round trips, and a clear error (never a crash) for every kind of bad bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/build_steps.hpp"
#include "common/random_data.hpp"
#include "core/hash.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"

namespace dg = dnngraph;

namespace {

// conv_fprop (pad 1) -> bias -> relu, then a separate scale: at least one fused partition.
struct ConvGraph {
  dg::Graph g;
  std::vector<float> x, w, b, y;
  ConvGraph(int64_t n, uint32_t seed) {
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
    auto X = g.tensor(dg::TensorAttr().set_name("X").set_uid(10).set_dim({n, 3, 5, 6}).set_stride({90, 30, 6, 1}));
    auto W = g.tensor(dg::TensorAttr().set_name("W").set_uid(11).set_dim({4, 3, 3, 3}).set_stride({27, 9, 3, 1}));
    auto B = g.tensor(dg::TensorAttr().set_name("B").set_uid(12).set_dim({1, 4, 1, 1}).set_stride({4, 1, 1, 1}));
    auto conv = g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
    auto Y = g.relu(g.bias(conv, B));
    Y->set_output(true).set_uid(13);
    test_random::UniformFloats u(seed);
    x = u.take(static_cast<size_t>(n * 90));
    w = u.take(108);
    b = u.take(4);
    y.assign(static_cast<size_t>(n * 120), std::nanf(""));
  }
  dg::UidVariantPack pack() { return {{10, x.data()}, {11, w.data()}, {12, b.data()}, {13, y.data()}}; }
};

using test_build::run_build_steps;

dg::Status run(const dg::Graph& g, const dg::Handle& h, ConvGraph& data) {
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  data.y.assign(data.y.size(), std::nanf(""));
  return g.execute(h, data.pack(), workspace.data(), ws);
}

void fix_checksum(std::vector<uint8_t>& bytes) {
  const uint64_t sum = dg::hash64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
}

class SerializeTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(run_build_steps(src_.g, handle_).ok());
    ASSERT_TRUE(run(src_.g, handle_, src_).ok());
    ASSERT_TRUE(src_.g.serialize(bytes_).ok());
  }
  // Deserializing must fail with SERIALIZATION_FAILED and a message containing `what`.
  void expect_rejected(const std::vector<uint8_t>& bytes, const std::string& what, const dg::Handle* h = nullptr) {
    dg::Graph g;
    const auto s = g.deserialize(h ? *h : handle_, bytes);
    EXPECT_EQ(s.code(), dg::ErrorCode::SERIALIZATION_FAILED) << s.to_string();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  }
  dg::Handle handle_{dg::Device::cpu()};
  ConvGraph src_{2, 3};
  std::vector<uint8_t> bytes_;
};

}  // namespace

TEST_F(SerializeTest, ReloadedPlanRunsByUidWithTheSameResults) {
  dg::Handle other(dg::Device::cpu());  // a fresh handle of the same device
  dg::Graph g2;
  auto cache = std::make_shared<dg::KernelCache>();
  g2.set_kernel_cache(cache);
  const auto s = g2.deserialize(other, bytes_);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(impl_of(g2).kernel_cache, cache);  // the graph's own settings survive
  EXPECT_EQ(impl_of(g2).plans->parts.size(), impl_of(src_.g).plans->parts.size());
  ConvGraph data{2, 3};
  ASSERT_TRUE(run(g2, other, data).ok());
  for (size_t i = 0; i < data.y.size(); ++i) ASSERT_EQ(data.y[i], src_.y[i]) << i;  // same plans: same bits
  std::string name, want;
  ASSERT_TRUE(g2.get_plan_name_at_index(0, name).ok());
  ASSERT_TRUE(src_.g.get_plan_name_at_index(impl_of(src_.g).plans->parts[0].chosen, want).ok());
  EXPECT_EQ(name, want);
  // The reloaded graph serializes to the same bytes.
  std::vector<uint8_t> again;
  ASSERT_TRUE(g2.serialize(again).ok());
  EXPECT_EQ(again, bytes_);
}

TEST_F(SerializeTest, SerializeNeedsBuiltPlans) {
  ConvGraph fresh{1, 1};
  std::vector<uint8_t> bytes;
  EXPECT_EQ(fresh.g.serialize(bytes).code(), dg::ErrorCode::INVALID_CALL_ORDER);
}

TEST_F(SerializeTest, EveryTruncationAndEveryFlippedByteIsRejected) {
  for (size_t n = 0; n < bytes_.size(); ++n) {
    dg::Graph g;
    const auto s = g.deserialize(handle_, std::vector<uint8_t>(bytes_.begin(), bytes_.begin() + static_cast<long>(n)));
    ASSERT_EQ(s.code(), dg::ErrorCode::SERIALIZATION_FAILED) << n;
  }
  for (size_t i = 0; i < bytes_.size(); ++i) {
    auto bad = bytes_;
    bad[i] ^= 0x20;
    dg::Graph g;
    ASSERT_EQ(g.deserialize(handle_, bad).code(), dg::ErrorCode::SERIALIZATION_FAILED) << i;
  }
  expect_rejected({}, "no \"DNNGRAPH\" magic");
  auto flipped = bytes_;
  flipped[bytes_.size() / 2] ^= 1;
  expect_rejected(flipped, "checksum mismatch");
  expect_rejected(std::vector<uint8_t>(bytes_.begin(), bytes_.end() - 1), "checksum mismatch");
}

TEST_F(SerializeTest, ForeignVersionsAndDevicesAreNamed) {
  auto format = bytes_;
  format[8] = 7;  // the format version follows the magic
  expect_rejected(format, "format version 7 is not the supported version 1");

  auto version = bytes_;
  const std::string ours = dg::kVersionString;
  ASSERT_EQ(std::memcmp(version.data() + 20, ours.data(), ours.size()), 0);  // magic, u32, u64 length
  std::memcpy(version.data() + 20, std::string(ours.size(), '9').data(), ours.size());
  fix_checksum(version);
  expect_rejected(version, "made by dnngraph " + std::string(ours.size(), '9') + "; this is dnngraph " + ours);

  dg::Handle elsewhere(dg::Device::cpu());
  impl_of(elsewhere).info.signature = "cpu:Some Other CPU";
  expect_rejected(bytes_, "the plan was built for device '" + impl_of(handle_).info.signature +
                              "'; this handle is 'cpu:Some Other CPU'", &elsewhere);
}

TEST_F(SerializeTest, ValidChecksumOverBadContentIsRejected) {
  // Damage the graph JSON but keep the checksum valid: the reader's error comes through.
  auto json = bytes_;
  const std::string needle = "\"conv_fprop\"";
  auto it = std::search(json.begin(), json.end(), needle.begin(), needle.end());
  ASSERT_NE(it, json.end());
  std::memcpy(&*it, "\"conv_fprox\"", needle.size());
  fix_checksum(json);
  expect_rejected(json, "the stored graph");
  // Trailing bytes before the checksum.
  auto longer = bytes_;
  longer.insert(longer.end() - 8, 0);
  fix_checksum(longer);
  expect_rejected(longer, "trailing or missing bytes");
}

TEST_F(SerializeTest, FailedReloadLeavesTheGraphAsItWas) {
  auto bad = bytes_;
  bad[bad.size() - 1] ^= 1;
  EXPECT_FALSE(src_.g.deserialize(handle_, bad).ok());
  ConvGraph data{2, 3};
  ASSERT_TRUE(run(src_.g, handle_, data).ok());
  EXPECT_EQ(data.y, src_.y);
}

TEST(Serialize, DynamicShapesAndPointwiseGraphsRoundTrip) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_dynamic_shape_enabled(true);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_uid(1).set_dim({4, 8}).set_stride({8, 1}));
  auto s = g.tensor(dg::TensorAttr().set_name("S").set_uid(2).set_dim({1, 1}).set_stride({1, 1}).set_value(0.5));
  auto y = g.scale(g.tanh(x), s);
  y->set_output(true).set_uid(3);
  ASSERT_TRUE(run_build_steps(g, h).ok());
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(g.serialize(bytes).ok());
  dg::Graph g2;
  ASSERT_TRUE(g2.deserialize(h, bytes).ok());
  EXPECT_TRUE(impl_of(g2).dynamic_shapes);
  std::vector<float> xs(32), ys(32, std::nanf(""));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2, 2);
  for (auto& v : xs) v = u(rng);
  ASSERT_TRUE(g2.execute(h, dg::UidVariantPack{{1, xs.data()}, {3, ys.data()}}, nullptr).ok());
  for (size_t i = 0; i < 32; ++i) EXPECT_NEAR(ys[i], 0.5f * std::tanh(xs[i]), 1e-6);
}

// Uids the library assigned (none set by the user) survive the round trip, so by-uid packs built
// from the original graph's tensors run the reloaded one.
TEST(Serialize, AssignedUidsSurvive) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({2, 5, 3}).set_stride({15, 3, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({2, 3, 4}).set_stride({12, 4, 1}));
  auto c = g.matmul(a, b, dg::MatmulAttr());
  c->set_output(true);
  ASSERT_TRUE(run_build_steps(g, h).ok());
  ASSERT_TRUE(a->has_uid() && b->has_uid() && c->has_uid());
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(g.serialize(bytes).ok());
  dg::Graph g2;
  ASSERT_TRUE(g2.deserialize(h, bytes).ok());
  test_random::UniformFloats u(9);
  std::vector<float> as = u.take(30), bs = u.take(24), cs(40, std::nanf("")), want(40, std::nanf(""));
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  ASSERT_TRUE(g.execute(h, {{a, as.data()}, {b, bs.data()}, {c, want.data()}}, workspace.data()).ok());
  ASSERT_TRUE(g2.get_workspace_size(ws).ok());
  workspace.resize(static_cast<size_t>(ws) + 1);
  const dg::UidVariantPack pack{{a->get_uid(), as.data()}, {b->get_uid(), bs.data()}, {c->get_uid(), cs.data()}};
  ASSERT_TRUE(g2.execute(h, pack, workspace.data()).ok());
  EXPECT_EQ(cs, want);
}
