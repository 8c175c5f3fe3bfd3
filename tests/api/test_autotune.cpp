// autotune: timing, reordering, early give-up, failures, the tuning DB record and mode B.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/random_data.hpp"
#include "dnngraph/dnngraph.hpp"
#include "dnngraph/version.hpp"
#include "graph/graph_impl.hpp"
#include "planning/autotune.hpp"
#include "planning/tuning_db.hpp"

namespace dg = dnngraph;

namespace {

// Wraps a real plan, adding a fixed delay or failing: candidates whose relative speed is known.
class ScriptedPlan final : public dg::Plan {
 public:
  ScriptedPlan(std::shared_ptr<dg::Plan> inner, int delay_us, bool fail) : inner_(std::move(inner)), delay_us_(delay_us), fail_(fail) {}
  int64_t workspace_size() const override { return 0; }
  dg::Status execute(const dg::ExecArgs& args) const override {
    if (fail_) return {dg::ErrorCode::GRAPH_EXECUTION_FAILED, "scripted failure"};
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    return inner_->execute(args);
  }

 private:
  std::shared_ptr<dg::Plan> inner_;
  int delay_us_;
  bool fail_;
};

// Points the tuning DB at a fresh folder for the test's duration.
class AutotuneTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testing::TempDir() + "dg_autotune_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ::setenv("DNNGRAPH_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("DNNGRAPH_TUNING_DB");
  }
  void TearDown() override { ::unsetenv("DNNGRAPH_CACHE_DIR"); }

  // Y = relu(X + B), built with the heuristics' choice.
  void build(dg::Graph& g, std::vector<dg::HeurMode> modes = {dg::HeurMode::A, dg::HeurMode::FALLBACK}) {
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
    x_ = g.tensor(dg::TensorAttr().set_name("X").set_uid(1).set_dim({3, 5, 7}).set_stride({35, 7, 1}));
    b_ = g.tensor(dg::TensorAttr().set_name("B").set_uid(2).set_dim({1, 5, 1}).set_stride({5, 1, 1}));
    y_ = g.relu(g.bias(x_, b_));
    y_->set_output(true).set_uid(3);
    ASSERT_TRUE(g.build_operation_graph(handle_).ok());
    ASSERT_TRUE(g.create_execution_plans(modes).ok());
    ASSERT_TRUE(g.check_support(handle_).ok());
    ASSERT_TRUE(g.build_plans(handle_).ok());
    test_random::UniformFloats u(7);
    xs_ = u.take(105);
    bs_ = u.take(5);
    ys_.assign(105, std::nanf(""));
  }

  // Replaces partition 0's list with scripted candidates around its built ref plan:
  // {delay_us, fail} each, labelled by a "script" knob so the DB can tell them apart.
  void script(dg::Graph& g, const std::vector<std::pair<int, bool>>& behaviours) {
    auto& pp = impl_of(g).plans->parts.at(0);
    auto real = pp.built.at(0);
    pp.candidates.clear();
    pp.built.clear();
    for (size_t i = 0; i < behaviours.size(); ++i) {
      pp.candidates.push_back(dg::Candidate{0, {{"script", static_cast<int64_t>(i)}}, 1e-6 * static_cast<double>(i), -1});
      pp.built.push_back(std::make_shared<ScriptedPlan>(real, behaviours[i].first, behaviours[i].second));
    }
  }

  dg::UidVariantPack pack() { return {{1, xs_.data()}, {2, bs_.data()}, {3, ys_.data()}}; }
  void expect_outputs_correct() {
    for (size_t i = 0; i < ys_.size(); ++i)
      ASSERT_NEAR(ys_[i], std::max(0.0f, xs_[i] + bs_[(i / 7) % 5]), 1e-6) << i;
  }

  std::string dir_;
  dg::Handle handle_{dg::Device::cpu()};
  dg::TensorPtr x_, b_, y_;
  std::vector<float> xs_, bs_, ys_;
};

}  // namespace

TEST_F(AutotuneTest, FastestFirstHopelessGivenUpWinnerRecorded) {
  dg::Graph g;
  build(g);
  script(g, {{3000, false}, {0, false}, {60000, false}});
  std::vector<dg::CandidateTiming> timings;
  std::vector<std::pair<size_t, size_t>> progress;
  dg::AutotuneOptions opts;
  opts.progress = [&](size_t done, size_t total) { progress.emplace_back(done, total); };
  auto p = pack();
  ASSERT_TRUE(dg::autotune_graph(impl_of(g), handle_, nullptr, &p, nullptr, opts, &timings).ok());
  expect_outputs_correct();  // left holding the chosen plan's results

  const auto& pp = impl_of(g).plans->parts[0];
  ASSERT_EQ(pp.candidates.size(), 3u);
  EXPECT_EQ(pp.chosen, 0);
  EXPECT_EQ(pp.candidates[0].knobs.at("script"), 1);
  EXPECT_EQ(pp.candidates[1].knobs.at("script"), 0);
  EXPECT_EQ(pp.candidates[2].knobs.at("script"), 2);
  EXPECT_GE(pp.candidates[1].measured_s, 3e-3);
  EXPECT_LT(pp.candidates[0].measured_s, pp.candidates[1].measured_s);
  std::string name;
  ASSERT_TRUE(g.get_plan_name_at_index(0, name).ok());
  EXPECT_EQ(name, "ref[script=1] (reference, not for speed)");

  ASSERT_EQ(timings.size(), 3u);
  for (const auto& t : timings) {
    EXPECT_TRUE(t.error.empty());
    if (t.label == "ref[script=2] (reference, not for speed)") {
      EXPECT_TRUE(t.gave_up);  // 60 ms against ~3 ms: one timed run, not five
      EXPECT_EQ(t.runs, 1);
      EXPECT_EQ(t.rank, 2u);
    } else {
      EXPECT_FALSE(t.gave_up) << t.label;
      EXPECT_EQ(t.runs, opts.repeats) << t.label;
    }
  }
  EXPECT_EQ(progress, (std::vector<std::pair<size_t, size_t>>{{1, 3}, {2, 3}, {3, 3}}));

  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(dir_ + "/tuning.db").load(records, warnings).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].engine, "ref");
  EXPECT_EQ(records[0].knobs, (dg::Knobs{{"script", 1}}));
  EXPECT_EQ(records[0].device, impl_of(handle_).info.signature);
  EXPECT_EQ(records[0].fingerprint, impl_of(g).ir->fingerprint());
  EXPECT_EQ(records[0].nodes, "0,1");
}

TEST_F(AutotuneTest, FailingCandidatesRankLastAndAllFailingIsAnError) {
  dg::Graph g;
  build(g);
  script(g, {{0, true}, {100, false}});
  std::vector<dg::CandidateTiming> timings;
  dg::AutotuneOptions opts;
  opts.record = false;
  auto p = pack();
  ASSERT_TRUE(dg::autotune_graph(impl_of(g), handle_, nullptr, &p, nullptr, opts, &timings).ok());
  const auto& pp = impl_of(g).plans->parts[0];
  EXPECT_EQ(pp.candidates[0].knobs.at("script"), 1);
  EXPECT_EQ(pp.candidates[1].measured_s, -1);
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_NE(timings[1].error.find("scripted failure"), std::string::npos);
  expect_outputs_correct();

  dg::Graph h;
  build(h);
  script(h, {{0, true}});
  impl_of(h).plans->parts[0].built.push_back(nullptr);  // an unbuilt candidate is not timed
  impl_of(h).plans->parts[0].candidates.push_back(dg::Candidate{0, {{"script", 9}}, 1, -1});
  auto q = pack();
  const auto s = dg::autotune_graph(impl_of(h), handle_, nullptr, &q, nullptr, opts, nullptr);
  EXPECT_EQ(s.code(), dg::ErrorCode::GRAPH_EXECUTION_FAILED);
  EXPECT_NE(s.message().find("no built candidate of partition 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("scripted failure"), std::string::npos) << s.message();
}

TEST_F(AutotuneTest, PublicAutotuneByTensorAndByUid) {
  dg::Graph g;
  build(g);
  ASSERT_TRUE(g.autotune(handle_, {{x_, xs_.data()}, {b_, bs_.data()}, {y_, ys_.data()}}, nullptr).ok());
  expect_outputs_correct();
  ys_.assign(ys_.size(), std::nanf(""));
  ASSERT_TRUE(g.autotune(handle_, pack(), nullptr).ok());
  expect_outputs_correct();
  EXPECT_GE(impl_of(g).plans->parts[0].candidates[0].measured_s, 0);
  EXPECT_NE(g.explain().find("measured"), std::string::npos);
  // Bad packs are reported as execute() reports them.
  EXPECT_EQ(g.autotune(handle_, dg::UidVariantPack{{1, xs_.data()}}, nullptr).code(), dg::ErrorCode::INVALID_VARIANT_PACK);
  dg::Graph unbuilt;
  EXPECT_EQ(unbuilt.autotune(handle_, pack(), nullptr).code(), dg::ErrorCode::INVALID_CALL_ORDER);
}

// Mode B puts the DB's recorded winner first; a record for a candidate that no longer exists, or
// for another device, changes nothing.
TEST_F(AutotuneTest, ModeBReadsTheRecordedWinner) {
  dg::Graph probe;
  build(probe);
  const auto fingerprint = impl_of(probe).ir->fingerprint();
  const auto& candidates = impl_of(probe).plans->parts[0].candidates;
  ASSERT_FALSE(candidates.empty());
  // Record the last candidate of mode A's list as the winner.
  const dg::Candidate last = candidates.back();
  dg::TuningRecord r{fingerprint, "0,1", impl_of(handle_).info.signature, dg::kVersionString,
                     std::string(dg::engine_by_id(last.engine_id)->name()), last.knobs, 1e-5};
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(dg::TuningDb::default_path()).store({r}, warnings).ok());
  dg::Graph g;
  build(g, {dg::HeurMode::B});
  const auto& c = impl_of(g).plans->parts[0].candidates;
  EXPECT_EQ(c.front().engine_id, last.engine_id);
  EXPECT_EQ(c.front().knobs, last.knobs);
  EXPECT_DOUBLE_EQ(c.front().measured_s, 1e-5);
  EXPECT_EQ(c.size(), candidates.size());

  // A stale record (knobs no candidate has) or another device's record: mode A's order.
  r.knobs = {{"no_such_knob", 1}};
  dg::TuningRecord other_device = r;
  other_device.knobs = last.knobs;
  other_device.device = "cuda:sm_90:NVIDIA H200";
  ASSERT_TRUE(dg::TuningDb(dg::TuningDb::default_path()).store({r, other_device}, warnings).ok());
  dg::Graph a, b;
  build(a, {dg::HeurMode::A});
  build(b, {dg::HeurMode::B});
  const auto& ca = impl_of(a).plans->parts[0].candidates;
  const auto& cb = impl_of(b).plans->parts[0].candidates;
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i) EXPECT_TRUE(ca[i].engine_id == cb[i].engine_id && ca[i].knobs == cb[i].knobs);
}

// Mode A, the default, also starts from the DB's record for this graph, partition and device, and
// explain() says where plan 0 came from; without a record it ranks by the cost model alone.
TEST_F(AutotuneTest, ModeAStartsFromTheRecordedWinner) {
  dg::Graph probe;
  build(probe, {dg::HeurMode::A, dg::HeurMode::FALLBACK});
  const auto& candidates = impl_of(probe).plans->parts[0].candidates;
  ASSERT_GE(candidates.size(), 2u) << probe.explain();
  EXPECT_FALSE(candidates.front().from_tuning_db);
  EXPECT_EQ(probe.explain().find("tuning DB"), std::string::npos);
  const dg::Candidate last = candidates.back();
  dg::TuningRecord r{impl_of(probe).ir->fingerprint(), "0,1", impl_of(handle_).info.signature, dg::kVersionString,
                     std::string(dg::engine_by_id(last.engine_id)->name()), last.knobs, 2e-5};
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(dg::TuningDb::default_path()).store({r}, warnings).ok());
  dg::Graph g;
  build(g, {dg::HeurMode::A, dg::HeurMode::FALLBACK});
  const auto& c = impl_of(g).plans->parts[0];
  EXPECT_EQ(c.candidates.front().engine_id, last.engine_id);
  EXPECT_EQ(c.candidates.front().knobs, last.knobs);
  EXPECT_TRUE(c.candidates.front().from_tuning_db);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_NE(g.explain().find("plan 0: " + last.label()), std::string::npos) << g.explain();
  EXPECT_NE(g.explain().find("the tuning DB's record for this graph and device"), std::string::npos);
  EXPECT_EQ(c.candidates.size(), candidates.size());
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  ASSERT_TRUE(g.execute(handle_, pack(), workspace.data()).ok());
  expect_outputs_correct();
}

// With real engines: a matmul has several candidates (engines and knob settings). Autotune times
// every built one, the chosen plan is the fastest measured, and mode B then starts from it.
TEST_F(AutotuneTest, MatmulCandidatesTunedAndReadBackByModeB) {
  auto make = [&](dg::Graph& g, std::vector<float>& a, std::vector<float>& b, std::vector<float>& c,
                  std::vector<dg::HeurMode> modes) {
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
    auto A = g.tensor(dg::TensorAttr().set_name("A").set_uid(1).set_dim({2, 24, 40}).set_stride({960, 40, 1}));
    auto B = g.tensor(dg::TensorAttr().set_name("B").set_uid(2).set_dim({2, 40, 16}).set_stride({640, 16, 1}));
    g.matmul(A, B, dg::MatmulAttr())->set_output(true).set_uid(3);
    ASSERT_TRUE(g.build_operation_graph(handle_).ok());
    ASSERT_TRUE(g.create_execution_plans(modes).ok());
    ASSERT_TRUE(g.build_plans(handle_, dg::BuildPlanPolicy::ALL).ok());
    test_random::UniformFloats u(11);
    a = u.take(1920);
    b = u.take(1280);
    c.assign(768, std::nanf(""));
  };
  dg::Graph g;
  std::vector<float> a, b, c;
  make(g, a, b, c, {dg::HeurMode::A, dg::HeurMode::FALLBACK});
  const auto& pp = impl_of(g).plans->parts.at(0);
  if (pp.candidates.size() < 2) GTEST_SKIP() << "only one engine takes a matmul in this build";
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  std::vector<char> workspace(static_cast<size_t>(ws) + 1);
  std::vector<dg::CandidateTiming> timings;
  const dg::UidVariantPack p{{1, a.data()}, {2, b.data()}, {3, c.data()}};
  ASSERT_TRUE(dg::autotune_graph(impl_of(g), handle_, nullptr, &p, workspace.data(), dg::AutotuneOptions{}, &timings).ok());
  size_t built = 0;
  for (const auto& plan : pp.built) built += plan != nullptr;
  EXPECT_EQ(timings.size(), built);
  for (size_t i = 1; i < pp.candidates.size() && pp.candidates[i].measured_s >= 0; ++i)
    EXPECT_LE(pp.candidates[0].measured_s, pp.candidates[i].measured_s);
  // The output holds the product.
  for (int64_t m = 0; m < 24; m += 5)
    for (int64_t n = 0; n < 16; n += 3) {
      double want = 0;
      for (int64_t k = 0; k < 40; ++k) want += double(a[static_cast<size_t>(960 + m * 40 + k)]) * b[static_cast<size_t>(640 + k * 16 + n)];
      EXPECT_NEAR(c[static_cast<size_t>(384 + m * 16 + n)], want, 1e-4);
    }
  const dg::Candidate winner = pp.candidates[0];
  dg::Graph again;
  std::vector<float> a2, b2, c2;
  make(again, a2, b2, c2, {dg::HeurMode::B});
  const auto& first = impl_of(again).plans->parts.at(0).candidates.at(0);
  EXPECT_EQ(first.engine_id, winner.engine_id);
  EXPECT_EQ(first.knobs, winner.knobs);
  EXPECT_DOUBLE_EQ(first.measured_s, winner.measured_s);
}

#ifdef DNNGRAPH_CLI_PATH
// `dnngraph tune`: the table, the progress bar, the DB record and the chart.
TEST_F(AutotuneTest, TuneCommandPrintsRanksRecordsAndCharts) {
  const std::string graph = std::string(DNNGRAPH_EXAMPLE_GRAPHS) + "/tutorial_matmul_epilogue_amax_small.json";
  const std::string db = dir_ + "/cli.db", chart = dir_ + "/spread.svg";
  const std::string cmd = std::string("'") + DNNGRAPH_CLI_PATH + "' tune '" + graph + "' --device cpu --repeats 2 --db '" +
                          db + "' --chart '" + chart + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  // Not a terminal here: progress comes as plain lines (no carriage returns), the last one complete.
  for (const char* part : {"rank", "workspace", "timing: ", " candidates, ", "chosen: ", "recorded in ", "chart: "})
    EXPECT_NE(out.find(part), std::string::npos) << part << "\n" << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << "a bar redrawn with \\r into a pipe";
  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(db).load(records, warnings).ok());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_NE(out.find("chosen: " + records[0].engine), std::string::npos) << out;
  FILE* svg = fopen(chart.c_str(), "r");
  ASSERT_NE(svg, nullptr);
  const size_t n = fread(buf, 1, sizeof buf - 1, svg);
  fclose(svg);
  EXPECT_EQ(std::string(buf, n).rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
}

// `dnngraph run` after `dnngraph tune`: the default plan is the recorded one, and run says so.
TEST_F(AutotuneTest, RunUsesTheRecordOfAnEarlierTune) {
  const std::string graph = std::string(DNNGRAPH_EXAMPLE_GRAPHS) + "/tutorial_matmul_epilogue_amax_small.json";
  const std::string db = dir_ + "/run.db";
  auto shell = [](const std::string& cmd, std::string& out) {
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    return pclose(p);
  };
  std::string before, tuned, after;
  const std::string run = "DNNGRAPH_TUNING_DB='" + db + "' '" + std::string(DNNGRAPH_CLI_PATH) + "' run '" + graph +
                          "' --device cpu --iters 1 --explain";
  ASSERT_EQ(shell(run, before), 0) << before;
  EXPECT_EQ(before.find("from the tuning DB"), std::string::npos) << before;
  ASSERT_EQ(shell("'" + std::string(DNNGRAPH_CLI_PATH) + "' tune '" + graph + "' --device cpu --repeats 2 --db '" + db + "'", tuned), 0)
      << tuned;
  std::vector<dg::TuningRecord> records;
  std::vector<std::string> warnings;
  ASSERT_TRUE(dg::TuningDb(db).load(records, warnings).ok());
  ASSERT_FALSE(records.empty());
  ASSERT_EQ(shell(run, after), 0) << after;
  EXPECT_NE(after.find("partitions from the tuning DB's record: " + db), std::string::npos) << after;
  EXPECT_NE(after.find("(the tuning DB's record for this graph and device)"), std::string::npos) << after;
  EXPECT_NE(after.find("plan 0: " + records[0].engine), std::string::npos) << after;
}
#endif
