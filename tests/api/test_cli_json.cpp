// The dnngraph command's --json on run and tune (schemas in docs/cli.md), parsed back and checked
// field by field; tune's table alignment for long plan names; tune --chart's SVG.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>

#include "common/temp_dir.hpp"

#ifdef DNNGRAPH_CLI_PATH

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Output {
  int rc = -1;
  std::string out;  // stdout only: stderr goes to /dev/null, so --json's stdout must parse alone
};

Output run_stdout(const std::string& args) {
  Output r;
  const std::string cmd = std::string("'") + DNNGRAPH_CLI_PATH + "' " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string graph_path(const char* name) { return (fs::path(DNNGRAPH_EXAMPLE_GRAPHS) / name).string(); }

json read_json_file(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The output tensors a graph file declares.
std::vector<std::string> declared_outputs(const json& graph) {
  std::vector<std::string> names;
  for (const auto& t : graph["tensors"])
    if (t.value("output", false)) names.push_back(t["name"]);
  return names;
}

void expect_partitions_well_formed(const json& parts) {
  ASSERT_TRUE(parts.is_array());
  ASSERT_FALSE(parts.empty());
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i]["index"], i);
    EXPECT_TRUE(parts[i]["pattern"].is_string());
    EXPECT_FALSE(parts[i]["nodes"].empty());
  }
}

}  // namespace

TEST(CliJson, RunJsonHoldsEveryDocumentedField) {
  const std::string g = graph_path("tutorial_matmul_epilogue_amax_small.json");
  const Output r = run_stdout("run '" + g + "' --device cpu --iters 3 --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const json file = read_json_file(g);
  EXPECT_EQ(j["graph"], g);
  EXPECT_EQ(j["name"], file["name"]);
  EXPECT_EQ(j["nodes"], file["nodes"].size());
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_TRUE(j["device_name"].is_string());
  EXPECT_TRUE(j["why_not_cuda"].is_string());
  expect_partitions_well_formed(j["partitions"]);
  // The plan run is every partition's chosen candidate.
  std::string chosen;
  for (const auto& p : j["partitions"]) {
    ASSERT_LT(p["chosen"].get<size_t>(), p["candidates"].size());
    const json& c = p["candidates"][p["chosen"].get<size_t>()];
    EXPECT_TRUE(c["engine_id"].is_number_integer());
    chosen += (chosen.empty() ? "" : " + ") + c["label"].get<std::string>();
  }
  EXPECT_EQ(j["plan"]["name"], chosen);
  EXPECT_TRUE(j["plan"]["index"].is_null());
  EXPECT_EQ(j["plan"]["tuned_partitions"], 0);
  ASSERT_FALSE(j["plans"].empty());
  EXPECT_EQ(j["time"]["iters"], 3);
  EXPECT_GT(j["time"]["median_s"].get<double>(), 0);
  EXPECT_LE(j["time"]["min_s"].get<double>(), j["time"]["median_s"].get<double>());
  EXPECT_GT(j["flops"].get<double>(), 0);
  EXPECT_GE(j["workspace_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(j["result"], "PASS");
  EXPECT_TRUE(j["checksums"].is_null());
  EXPECT_EQ(j["check"]["passed"], true);
  EXPECT_EQ(j["check"]["rtol"], 0.01);  // BFLOAT16 io
  std::vector<std::string> compared;
  for (const auto& c : j["check"]["outputs"]) {
    compared.push_back(c["tensor"]);
    EXPECT_EQ(c["ok"], true);
    EXPECT_EQ(c["mismatches"], 0);
    EXPECT_GT(c["elements"].get<int64_t>(), 0);
    EXPECT_LE(c["max_rel_err"].get<double>(), c["tolerance"].get<double>());
  }
  EXPECT_EQ(compared, declared_outputs(file));
}

TEST(CliJson, RunJsonPlanIndexNoCheckAndMismatch) {
  const std::string g = graph_path("tutorial_matmul_epilogue_amax_small.json");
  Output r = run_stdout("run '" + g + "' --device cpu --iters 1 --plan 0 --no-check --json --engines ref");
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["plan"]["index"], 0);
  EXPECT_EQ(j["plan"]["name"], j["plans"][0]);
  EXPECT_EQ(j["plans"][0], "ref (reference, not for speed)");
  EXPECT_TRUE(j["check"].is_null());
  EXPECT_EQ(j["result"], "UNCHECKED");
  ASSERT_EQ(j["checksums"].size(), 2u);
  EXPECT_EQ(j["checksums"][0]["tensor"], "Y");
  EXPECT_TRUE(j["checksums"][0]["checksum"].is_number());
  // An error prints no JSON: the message is on stderr.
  r = run_stdout("run '" + g + "' --plan 99 --json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out.find('{'), std::string::npos) << r.out;
  // A check that fails still prints its JSON, with exit code 1: an fp32 GEMM (fp32 accumulation)
  // cannot match ref (double accumulation) on every element at a tolerance of 1e-300.
  const std::string mm = test_files::fresh_dir("dg_cli_json") + "/matmul.json";
  std::ofstream(mm) << R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT",
    "compute_data_type": "FLOAT",
    "tensors": [{"name": "A", "dim": [1, 64, 256], "stride": [16384, 256, 1]},
                {"name": "B", "dim": [1, 256, 64], "stride": [16384, 64, 1]}, {"name": "C", "output": true}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": {"A": "A", "B": "B"}, "outputs": {"C": "C"}}]})";
  r = run_stdout("run '" + mm + "' --device cpu --iters 1 --rtol 1e-300 --json --engines cpu_gemm_packed");
  if (r.rc == 2) GTEST_SKIP() << "needs cpu_gemm_packed";
  EXPECT_EQ(r.rc, 1) << r.out;
  j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["result"], "FAIL");
  EXPECT_EQ(j["check"]["passed"], false);
  EXPECT_GT(j["check"]["outputs"][0]["mismatches"].get<int64_t>(), 0);
  EXPECT_EQ(j["check"]["outputs"][0]["ok"], false);
}

TEST(CliJson, TuneJsonChartAndRecord) {
  const std::string dir = test_files::fresh_dir("dg_cli_json");
  const std::string g = graph_path("tutorial_matmul_epilogue_amax_small.json");
  const Output r = run_stdout("tune '" + g + "' --device cpu --warmup 0 --repeats 2 --db '" + dir +
                              "/tuning.db' --chart '" + dir + "/chart.svg' --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["graph"], g);
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["warmup"], 0);
  EXPECT_EQ(j["repeats"], 2);
  EXPECT_EQ(j["recorded_in"], dir + "/tuning.db");
  EXPECT_TRUE(fs::exists(dir + "/tuning.db"));
  EXPECT_EQ(j["chart"], dir + "/chart.svg");
  EXPECT_TRUE(j["tuning_db_warnings"].empty());
  expect_partitions_well_formed(j["partitions"]);
  std::string chosen;
  std::vector<std::string> labels;
  for (const auto& p : j["partitions"]) {
    const json& rows = p["timings"];
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(p["candidates"].get<size_t>(), rows.size() + p["unbuilt"].get<size_t>());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i]["rank"], i);
      EXPECT_EQ(rows[i]["chosen"], i == 0);
      EXPECT_TRUE(rows[i]["error"].is_null());
      EXPECT_GE(rows[i]["runs"].get<int>(), 1);
      EXPECT_GE(rows[i]["workspace_bytes"].get<int64_t>(), 0);
      labels.push_back(rows[i]["plan"]);
    }
    // Rank 0 is the fastest, and the spread is slowest over fastest.
    EXPECT_EQ(rows[0]["seconds"], p["fastest_s"]);
    EXPECT_DOUBLE_EQ(p["spread"].get<double>(), p["slowest_s"].get<double>() / p["fastest_s"].get<double>());
    chosen += (chosen.empty() ? "" : " + ") + rows[0]["plan"].get<std::string>();
  }
  EXPECT_EQ(j["chosen"], chosen);
  // The chart: one bar per timed candidate (plus the background and the legend's 4 swatches), every
  // plan name, times in ms, and the chosen one marked.
  std::ifstream in(dir + "/chart.svg");
  const std::string svg{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  size_t rects = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 1 + 4 + labels.size());
  for (const auto& l : labels) EXPECT_NE(svg.find(l), std::string::npos) << l;
  EXPECT_NE(svg.find(" ms  chosen</text>"), std::string::npos) << svg;
}

// Plan names over 44 characters (cpu_conv_implicit_gemm's knobs) widen the plan column: the time,
// runs and workspace columns end at the same place on every row and the header.
TEST(CliJson, TuneTableStaysAlignedForLongPlanNames) {
  const Output r = run_stdout("tune '" + graph_path("tutorial_conv_bias_relu_small.json") +
                              "' --device cpu --warmup 0 --repeats 1 --no-record");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::regex row(R"(^  (\d+) +(\S.*\S) +((?:[0-9.]+ (?:ns|us|ms|s))|failed) +(\d+) +(\d+))");
  std::istringstream in(r.out);
  size_t header_end = 0, rows = 0, long_names = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("  rank  plan", 0) == 0) {
      header_end = line.size();
      continue;
    }
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    ++rows;
    long_names += m[2].length() > 44;
    EXPECT_EQ(static_cast<size_t>(m.position(5) + m.length(5)), header_end) << line << "\n" << r.out;
  }
  EXPECT_GT(rows, 1u) << r.out;
  EXPECT_GT(long_names, 0u) << "no plan name over 44 characters: the test checks nothing\n" << r.out;
}

#endif  // DNNGRAPH_CLI_PATH
