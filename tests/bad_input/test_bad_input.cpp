// Every generated case (cases.hpp) through both ways a graph is made: built in C++ and taken
// through the build steps, and written to JSON, read back and taken through the build steps and,
// when accepted and small, executed on the CPU engines and on ref (run_vs_ref.hpp). Each must end
// as its case says: a clean error with the code, naming the node or tensor and the rule, or a run
// that agrees with ref. Also the variant-pack faults a generated graph cannot show: uid packs that
// miss a tensor, name an unknown uid, hold a null pointer, or come with too small a workspace.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "bad_input/cases.hpp"
#include "bad_input/run_vs_ref.hpp"
#include "common/build_steps.hpp"

namespace dg = dnngraph;
using bad_input::Case;
using bad_input::Verdict;

namespace {

const dg::Handle& cpu_handle() {
  static const dg::Handle handle(dg::Device::cpu());
  return handle;
}

void expect_verdict(const dg::Status& s, const bad_input::Expect& e, const std::string& path) {
  SCOPED_TRACE(path);
  if (e.verdict != Verdict::REJECTED) {
    EXPECT_TRUE(s.ok()) << s.to_string();
    return;
  }
  EXPECT_EQ(dg::to_string(s.code()), dg::to_string(e.code)) << s.to_string();
  EXPECT_NE(s.message().find(e.names), std::string::npos)
      << "the message should name " << e.names << ": " << s.message();
  EXPECT_NE(s.message().find(e.rule), std::string::npos)
      << "the message should say \"" << e.rule << "\": " << s.message();
}

class BadInput : public testing::TestWithParam<Case> {};

}  // namespace

namespace bad_input {
// gtest prints a failing case by its name, not as bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
}  // namespace bad_input

TEST(BadInputCases, AtLeastThreeHundredWithUniqueNames) {
  const auto cases = bad_input::all_cases();
  EXPECT_GE(cases.size(), 300u);
  std::set<std::string> names;
  int rejected = 0, runs = 0;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    rejected += c.expect.verdict == Verdict::REJECTED;
    runs += c.expect.verdict == Verdict::RUNS;
  }
  // Both halves matter: the faults refused, and their valid neighbours computed right.
  EXPECT_GE(rejected, 150);
  EXPECT_GE(runs, 100);
}

TEST_P(BadInput, EndsAsAnErrorOrAsRefComputes) {
  const Case& c = GetParam();
  std::string json = c.json;
  if (c.build) {
    dg::Graph built;
    c.build(built);
    expect_verdict(test_build::run_build_steps(built, cpu_handle()), c.expect, "built in C++");
    if (!c.through_json) return;
    dg::Graph fresh;  // written before validation: the reader infers what the builder left out
    c.build(fresh);
    json = fresh.to_json();
  }
  const bad_input::RunResult r = bad_input::run_json_vs_ref(json, cpu_handle());
  const bad_input::Expect& e = c.json_expect ? *c.json_expect : c.expect;
  expect_verdict(r.status, e, "read from JSON, failed at " + r.stage);
  EXPECT_EQ(r.mismatch, "") << json;
  if (e.verdict == Verdict::RUNS) {
    EXPECT_TRUE(r.executed) << "accepted but not executed";
  }
}

INSTANTIATE_TEST_SUITE_P(Generated, BadInput, testing::ValuesIn(bad_input::all_cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

namespace {

// relu(X) built for the CPU; X has uid 10 and Y uid 11.
void built_relu(dg::Graph& g) {
  auto x = bad_input::user_tensor(g, "X", {2, 3}, {3, 1});
  x->set_uid(10);
  auto y = g.pointwise(x, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"));
  y->set_output(true).set_name("Y").set_uid(11);
  ASSERT_TRUE(test_build::run_build_steps(g, cpu_handle()).ok());
}

void expect_pack_error(const dg::Status& s, const std::string& names) {
  EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VARIANT_PACK) << s.to_string();
  EXPECT_NE(s.message().find(names), std::string::npos) << s.message();
}

}  // namespace

TEST(BadInputPacks, AUidPackMissingATensorNamesIt) {
  dg::Graph g;
  built_relu(g);
  float x[6] = {}, y[6] = {};
  expect_pack_error(g.execute(cpu_handle(), dg::UidVariantPack{{10, x}}, nullptr), "tensor 'Y'");
  expect_pack_error(g.execute(cpu_handle(), dg::UidVariantPack{{11, y}}, nullptr), "tensor 'X'");
}

TEST(BadInputPacks, ANullPointerNamesItsTensor) {
  dg::Graph g;
  built_relu(g);
  float x[6] = {};
  expect_pack_error(g.execute(cpu_handle(), dg::UidVariantPack{{10, x}, {11, nullptr}}, nullptr), "tensor 'Y'");
}

TEST(BadInputPacks, AnUnknownUidIsNamed) {
  dg::Graph g;
  built_relu(g);
  float x[6] = {}, y[6] = {};
  for (int64_t uid : {int64_t{-1}, int64_t{12}, INT64_MAX}) {
    const dg::Status s = g.execute(cpu_handle(), dg::UidVariantPack{{10, x}, {11, y}, {uid, x}}, nullptr);
    expect_pack_error(s, "uid " + std::to_string(uid));
  }
}

TEST(BadInputPacks, ATooSmallWorkspaceIsAnErrorNotAnOverrun) {
  // A conv whose plans want workspace; given one byte less than it needs.
  dg::Graph g;
  auto x = bad_input::user_tensor(g, "X", {1, 4, 9, 9}, bad_input::packed_strides({1, 4, 9, 9}));
  auto w = bad_input::user_tensor(g, "W", {4, 4, 3, 3}, bad_input::packed_strides({4, 4, 3, 3}));
  auto y = g.relu(g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_name("conv")));
  y->set_output(true).set_name("Y");
  ASSERT_TRUE(test_build::run_build_steps(g, cpu_handle()).ok());
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  if (ws == 0) GTEST_SKIP() << "the chosen plan needs no workspace";
  std::vector<float> xs(324), wsv(144), ys(324);
  std::vector<unsigned char> workspace(static_cast<size_t>(ws));
  const dg::Status s =
      g.execute(cpu_handle(), {{x, xs.data()}, {w, wsv.data()}, {y, ys.data()}}, workspace.data(), ws - 1);
  EXPECT_EQ(s.code(), dg::ErrorCode::WORKSPACE_TOO_SMALL) << s.to_string();
}
