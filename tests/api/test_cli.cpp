// The dnngraph command: info, run on every small example graph, error exits, and the tour.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>

#ifdef DNNGRAPH_CLI_PATH

namespace {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string out;  // stdout and stderr
};

Result run_cli(const std::string& args) {
  Result r;
  const std::string cmd = std::string("'") + DNNGRAPH_CLI_PATH + "' " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

fs::path examples_dir() { return DNNGRAPH_EXAMPLE_GRAPHS; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Cli, InfoListsVersionDevicesRuntimeAndEngines) {
  const Result r = run_cli("info");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "dnngraph 0.1.0")) << r.out;
  EXPECT_TRUE(contains(r.out, "devices:\n  cpu: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "CUDA runtime libraries:")) << r.out;
  EXPECT_TRUE(contains(r.out, "engines (id: name):\n  0: ref\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "tuning DB: ")) << r.out;
}

TEST(Cli, RunPassesOnEverySmallExampleGraph) {
  int graphs = 0;
  for (const auto& entry : fs::directory_iterator(examples_dir())) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with("_small.json")) continue;
    SCOPED_TRACE(name);
    ++graphs;
    const Result r = run_cli("run '" + entry.path().string() + "' --iters 2 --seed 7");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "check against ref (cpu):")) << r.out;
    EXPECT_TRUE(contains(r.out, "\nPASS\n")) << r.out;
    EXPECT_FALSE(contains(r.out, "MISMATCH")) << r.out;
  }
  EXPECT_EQ(graphs, 4);
}

TEST(Cli, RunPlanIndexExplainAndEngineFilter) {
  const std::string g = (examples_dir() / "tutorial_matmul_epilogue_amax_small.json").string();
  Result r = run_cli("run '" + g + "' --plan 0 --explain --iters 1 --engines ref");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "running plan 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "plan 0: ref")) << r.out;
  EXPECT_TRUE(contains(r.out, "partition 0 (")) << r.out;  // explain()
  EXPECT_TRUE(contains(r.out, "'amax': max abs err 0.000e+00")) << r.out;
  r = run_cli("run '" + g + "' --plan 99");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "error: --plan: INVALID_VALUE: --plan 99: the graph has ")) << r.out;
}

// With a zero tolerance, an fp32 GEMM (fp32 accumulation) cannot match ref (double accumulation)
// on every element of 64x64 dot products of length 256: the check must fail with exit code 1.
TEST(Cli, RunExitsOneOnMismatch) {
  const Result engines = run_cli("info");
  if (!contains(engines.out, ": cpu_gemm_packed\n")) GTEST_SKIP() << "needs an fp32 matmul engine other than ref";
  const fs::path g = fs::temp_directory_path() / "dnngraph_test_cli_matmul.json";
  FILE* f = std::fopen(g.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT", "compute_data_type": "FLOAT",
    "tensors": [{"name": "A", "dim": [1, 64, 256], "stride": [16384, 256, 1]},
                {"name": "B", "dim": [1, 256, 64], "stride": [16384, 64, 1]}, {"name": "C", "output": true}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": {"A": "A", "B": "B"}, "outputs": {"C": "C"}}]})", f);
  std::fclose(f);
  Result r = run_cli("run '" + g.string() + "' --device cpu --iters 1 --engines cpu_gemm_packed");
  EXPECT_EQ(r.rc, 0) << r.out;
  r = run_cli("run '" + g.string() + "' --device cpu --iters 1 --rtol 1e-300 --engines cpu_gemm_packed");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "MISMATCH in ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nFAIL\n")) << r.out;
  fs::remove(g);
}

TEST(Cli, RunReportsBadInput) {
  Result r = run_cli("run /nonexistent.json");
  EXPECT_NE(r.rc, 0) << r.out;
  const fs::path bad = fs::temp_directory_path() / "dnngraph_test_cli_bad.json";
  FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(R"({"format": "dnngraph-graph", "version": 1, "tensors": [], "nodes": [{"name": "n", "op": "fft"}]})", f);
  std::fclose(f);
  r = run_cli("run '" + bad.string() + "'");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "INVALID_VALUE: graph JSON: node 'n' at $.nodes[0].op: unknown op 'fft'")) << r.out;
  const std::string g = (examples_dir() / "convnet_block_small.json").string();
  r = run_cli("run '" + g + "' --device gpu");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "device 'gpu' is not one of cpu, cuda, cuda:N")) << r.out;
  fs::remove(bad);
}

TEST(Cli, TourCompletesWithEveryCheckPassing) {
  const Result r = run_cli("tour");
  EXPECT_EQ(r.rc, 0) << r.out;
  for (const char* step : {"[1/6] fused convolution", "[2/6] matmul epilogue", "[3/6] causal attention",
                           "[4/6] serialize", "[5/6] dynamic batch sizes", "[6/6] capture"})
    EXPECT_TRUE(contains(r.out, step)) << step << "\n" << r.out;
  EXPECT_TRUE(contains(r.out, " 0 failed\n")) << r.out;
  EXPECT_FALSE(contains(r.out, "MISMATCH")) << r.out;
  EXPECT_FALSE(contains(r.out, "FAILED")) << r.out;
}

// The full-size path checks batch slices against ref; forced here at reduced sizes.
TEST(Cli, TourChecksBatchSlices) {
  const Result r = run_cli("tour --quick --check-by-slices --device cpu");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "check 'Y (batch 1)': ")) << r.out;
  EXPECT_TRUE(contains(r.out, "'amax' spans the whole batch: not compared with ref")) << r.out;
  EXPECT_TRUE(contains(r.out, "against max |Y|")) << r.out;
  EXPECT_TRUE(contains(r.out, " 0 failed\n")) << r.out;
}

#endif  // DNNGRAPH_CLI_PATH
