// The dnngraph command: info, run on every small example graph, error exits, and the tour.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <sys/wait.h>

#include "common/temp_dir.hpp"

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

// Expects the command's output to hold every one of `parts`; a miss names the part.
void expect_output_holds(const Result& r, std::initializer_list<const char*> parts) {
  for (const char* part : parts) EXPECT_TRUE(contains(r.out, part)) << "missing: " << part << "\n" << r.out;
}

// Writes `text` to the file at `path`.
::testing::AssertionResult write_file(const fs::path& path, const char* text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return ::testing::AssertionFailure() << "cannot write " << path;
  std::fputs(text, f);
  std::fclose(f);
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Cli, InfoListsVersionDevicesRuntimeAndEngines) {
  const Result r = run_cli("info");
  ASSERT_EQ(r.rc, 0) << r.out;
  expect_output_holds(r, {"dnngraph 0.1.0", "devices:\n  cpu: ", "CUDA runtime libraries:",
                          "engines (id: name):\n  0: ref\n", "tuning DB: "});
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
    expect_output_holds(r, {"check against ref (cpu):", "\nPASS\n"});
    EXPECT_FALSE(contains(r.out, "MISMATCH")) << r.out;
  }
  EXPECT_EQ(graphs, 4);
}

TEST(Cli, RunPlanIndexExplainAndEngineFilter) {
  const std::string g = (examples_dir() / "tutorial_matmul_epilogue_amax_small.json").string();
  Result r = run_cli("run '" + g + "' --plan 0 --explain --iters 1 --engines ref");
  EXPECT_EQ(r.rc, 0) << r.out;
  // "partition 0 (" comes from --explain
  expect_output_holds(r, {"running plan 0", "plan 0: ref", "partition 0 (", "'amax': max abs err 0.000e+00"});
  r = run_cli("run '" + g + "' --plan 99");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "error: --plan: INVALID_VALUE: --plan 99: the graph has ")) << r.out;
}

// --explain prints the plan list once (it has its own), an unknown engine is named with the list of
// engines (exit 2), and an unknown command is named with the commands (exit 64).
TEST(Cli, ExplainOnceUnknownEngineAndUnknownCommandNamed) {
  const std::string g = (examples_dir() / "tutorial_matmul_epilogue_amax_small.json").string();
  Result r = run_cli("run '" + g + "' --explain --iters 1 --device cpu");
  EXPECT_EQ(r.rc, 0) << r.out;
  size_t plan0 = 0;
  for (size_t at = r.out.find("plan 0: "); at != std::string::npos; at = r.out.find("plan 0: ", at + 1)) ++plan0;
  EXPECT_EQ(plan0, 1u) << r.out;
  r = run_cli("run '" + g + "' --iters 1 --device cpu --engines ref,nosuch");
  EXPECT_EQ(r.rc, 2) << r.out;
  expect_output_holds(r, {"select_engines: no engine is named 'nosuch'; the engines are ref, cpu_"});
  r = run_cli("nosuchcmd");
  EXPECT_EQ(r.rc, 64) << r.out;
  expect_output_holds(r, {"unknown command 'nosuchcmd'; the commands are info, run, tour, tune"});
}

// info --json: one JSON object with the documented keys (docs/cli.md); --log-level before or after
// the command turns the library's log lines on.
TEST(Cli, InfoJsonAndLogLevel) {
  Result r = run_cli("info --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')), nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  for (const char* key : {"version", "devices", "engines", "cuda_runtime", "vendor_libraries", "cache_folder",
                          "tuning_db", "default_device"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["devices"][0]["device"], "cpu");
  EXPECT_EQ(j["engines"][0]["name"], "ref");
  for (const char* args : {"--log-level 2 info", "info --log-level 2"}) {
    r = run_cli(args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, "[dnngraph I]")) << args << "\n" << r.out;
  }
  EXPECT_FALSE(contains(run_cli("info").out, "[dnngraph I]"));
  EXPECT_EQ(run_cli("--log-level 7 info").rc, 64);
}

// With a zero tolerance, an fp32 GEMM (fp32 accumulation) cannot match ref (double accumulation)
// on every element of 64x64 dot products of length 256: the check must fail with exit code 1.
TEST(Cli, RunExitsOneOnMismatch) {
  const Result engines = run_cli("info");
  if (!contains(engines.out, ": cpu_gemm_packed\n")) GTEST_SKIP() << "needs an fp32 matmul engine other than ref";
  const fs::path g = fs::temp_directory_path() / "dnngraph_test_cli_matmul.json";
  ASSERT_TRUE(write_file(g, R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT",
    "compute_data_type": "FLOAT",
    "tensors": [{"name": "A", "dim": [1, 64, 256], "stride": [16384, 256, 1]},
                {"name": "B", "dim": [1, 256, 64], "stride": [16384, 64, 1]}, {"name": "C", "output": true}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": {"A": "A", "B": "B"}, "outputs": {"C": "C"}}]})"));
  Result r = run_cli("run '" + g.string() + "' --device cpu --iters 1 --engines cpu_gemm_packed");
  EXPECT_EQ(r.rc, 0) << r.out;
  r = run_cli("run '" + g.string() + "' --device cpu --iters 1 --rtol 1e-300 --engines cpu_gemm_packed");
  EXPECT_EQ(r.rc, 1) << r.out;
  expect_output_holds(r, {"MISMATCH in ", "\nFAIL\n"});
  fs::remove(g);
}

TEST(Cli, RunReportsBadInput) {
  Result r = run_cli("run /nonexistent.json");
  EXPECT_NE(r.rc, 0) << r.out;
  const fs::path bad = fs::temp_directory_path() / "dnngraph_test_cli_bad.json";
  ASSERT_TRUE(write_file(
      bad, R"({"format": "dnngraph-graph", "version": 1, "tensors": [], "nodes": [{"name": "n", "op": "fft"}]})"));
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
  expect_output_holds(r, {"[1/6] fused convolution", "[2/6] matmul epilogue", "[3/6] causal attention",
                          "[4/6] serialize", "[5/6] dynamic batch sizes", "[6/6] capture", " 0 failed\n"});
  EXPECT_FALSE(contains(r.out, "MISMATCH")) << r.out;
  EXPECT_FALSE(contains(r.out, "FAILED")) << r.out;
}

// The full-size path checks batch slices against ref; forced here at reduced sizes.
TEST(Cli, TourChecksBatchSlices) {
  const Result r = run_cli("tour --quick --check-by-slices --device cpu");
  EXPECT_EQ(r.rc, 0) << r.out;
  expect_output_holds(r, {"check 'Y (batch 1)': ", "'amax' spans the whole batch: not compared with ref",
                          "against max |Y|", " 0 failed\n"});
}

// ---- failures: each ends in a message and an exit code of docs/errors.md

namespace {

// `name` in a fresh folder.
std::string temp_path(const std::string& name) { return test_files::fresh_dir("dg_cli") + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string small_graph() { return "'" + (examples_dir() / "tutorial_matmul_epilogue_amax_small.json").string() + "'"; }

std::string tune_into(const std::string& db) {
  return "tune " + small_graph() + " --device cpu --warmup 0 --repeats 1 --db '" + db + "'";
}

}  // namespace

TEST(Cli, OutOfRangeOptionsAreUsageErrors) {
  const std::string g = small_graph();
  const std::pair<std::string, std::string> cases[] = {
      {"run " + g + " --plan -5", "--plan: Value -5 not in range 0 to 9223372036854775807"},
      {"run " + g + " --rtol -1", "--rtol: Value -1 not in range 0.000000 to 1.000000"},
      {"run " + g + " --rtol nan", "--rtol: Value nan is not a number"},
      {"run " + g + " --iters 0", "--iters: Value 0 not in range 1 to 2147483647"},
      {"run " + g + " --seed -5", "--seed: Value -5 not in range 0 to 9223372036854775807"},
      {"run " + g + " --atol -1", "The following arguments were not expected: -1 --atol"},
      {"tune " + g + " --repeats 0", "--repeats: Value 0 not in range 1 to 2147483647"},
      {"tune " + g + " --warmup -1", "--warmup: Value -1 not in range 0 to 2147483647"},
      {"run /nonexistent/graph.json", "File does not exist: /nonexistent/graph.json"},
      {"frobnicate", "unknown command 'frobnicate'; the commands are info, run, tour, tune"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run_cli(args);
    EXPECT_EQ(r.rc, 64) << args << "\n" << r.out;
    EXPECT_TRUE(contains(r.out, message)) << args << "\n" << r.out;
  }
  EXPECT_EQ(run_cli("--version").rc, 0);
  EXPECT_EQ(run_cli("run --help").rc, 0);
}

TEST(Cli, DeviceNamesOutOfRangeAreErrors) {
  const Result r = run_cli("run " + small_graph() + " --device cuda:99999999999999999999");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "error: --device: INVALID_VALUE: device 'cuda:99999999999999999999' is not one of"))
      << r.out;
}

// 2^46 float elements (2^48 bytes, the library's limit) pass validation but fit in no host's memory.
TEST(Cli, OutOfMemoryIsAMessageAndExitCode3) {
  const std::string path = temp_path("huge.json");
  std::ofstream(path) << R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT",
    "tensors": [{"name": "X", "uid": 1, "dim": [8388608, 8388608], "stride": [8388608, 1]},
                {"name": "Y", "uid": 2, "output": true}],
    "nodes": [{"name": "relu", "op": "pointwise", "mode": "RELU_FWD", "inputs": {"IN_0": "X"}, "outputs": {"OUT": "Y"}}]})";
  // Under AddressSanitizer a failed allocation must throw, as it does in a normal build.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan ? asan : "";
  ::setenv("ASAN_OPTIONS", (saved.empty() ? "" : saved + ":").append("allocator_may_return_null=1").c_str(), 1);
  const Result r = run_cli("run '" + path + "' --device cpu --iters 1");
  if (asan) ::setenv("ASAN_OPTIONS", saved.c_str(), 1);
  else ::unsetenv("ASAN_OPTIONS");
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_TRUE(contains(r.out, "error: out of memory")) << r.out;
}

TEST(Cli, TuneFailsWhenItCannotRecord) {
  const std::string file = temp_path("a_file");
  std::ofstream(file) << "not a folder\n";
  const Result r = run_cli(tune_into(file + "/sub/tuning.db"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "error: tuning: IO_ERROR: autotune: the winners were not recorded: cannot create the "
                              "folder")) << r.out;
  EXPECT_FALSE(contains(r.out, "recorded in")) << r.out;
}

TEST(Cli, TuneReportsADamagedDbAndKeepsItAside) {
  const std::string db = temp_path("tuning.db");
  ASSERT_EQ(run_cli(tune_into(db)).rc, 0);
  std::ofstream(db, std::ios::app) << "a damaged line\n";
  const std::string damaged = read_file(db);
  const Result r = run_cli(tune_into(db));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "warning: tuning DB: " + db + ":3: skipped a corrupt line: expected 9 tab-separated "
                              "fields, found 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 damaged line(s), the first at line 3")) << r.out;
  EXPECT_TRUE(contains(r.out, "recorded in " + db)) << r.out;
  int copies = 0;
  for (const auto& e : fs::directory_iterator(fs::path(db).parent_path()))
    if (e.path().filename().string().starts_with("tuning.db.damaged-")) {
      ++copies;
      EXPECT_EQ(read_file(e.path().string()), damaged);
      EXPECT_TRUE(contains(r.out, "kept as " + e.path().string())) << r.out;
    }
  EXPECT_EQ(copies, 1);
  EXPECT_FALSE(contains(read_file(db), "a damaged line"));
}

TEST(Cli, TuneLeavesAFileThatIsNoDbUntouched) {
  const std::string file = temp_path("notes.txt");
  std::ofstream(file) << "my notes\nsecond line\n";
  const Result r = run_cli(tune_into(file));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_TRUE(contains(r.out, file + " is not a dnngraph tuning DB (line 1: expected 9 tab-separated fields, found 1); "
                                     "it was left untouched")) << r.out;
  EXPECT_EQ(read_file(file), "my notes\nsecond line\n");
}

#endif  // DNNGRAPH_CLI_PATH
