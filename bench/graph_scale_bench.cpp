// Graph-scale benchmark (not a test): how the time and memory of the build steps grow with the
// number of nodes and tensors. Cases, each built by the builder or read back with from_json:
//   relus   N independent ReLUs, each on its own input and output (N nodes, 2N tensors)
//   chain   a chain of N pointwise ops (ReLU and bias add in turn) on one input
//   concat  one concatenate of N inputs
//   mixed   N/6 blocks of conv_fprop -> bias -> ReLU and matmul -> scale -> GELU, chained
// Every (case, source, N) runs in a fresh child process under a time and address-space limit, so
// that the peak RSS of each stage (VmHWM, reset before each stage through /proc/self/clear_refs)
// is its own and a run that blows up cannot take the machine with it. Execution runs once on the
// CPU for N up to --execute-max, with every output checked to be written.
// Usage: dnngraph_bench_graph_scale_bench [--n 1000,10000,100000] [--cases relus,chain,concat,mixed]
//        [--sources builder,json] [--timeout S] [--mem-limit-mb MB] [--execute-max N]
//        [--device cpu|cuda] [--engines a,b]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "planning/introspect.hpp"

namespace dg = dnngraph;

namespace {

// ---- the graphs

struct IoTensor {
  int64_t uid = 0;
  int64_t elements = 0;  // FLOAT elements spanned from the base pointer
  bool is_output = false;
};

struct CaseGraph {
  std::vector<IoTensor> io;
  int64_t next_uid = 1;

  dg::TensorPtr input(dg::Graph& g, const std::string& name, std::vector<int64_t> dim, std::vector<int64_t> stride) {
    int64_t span = 1;
    for (size_t i = 0; i < dim.size(); ++i) span += (dim[i] - 1) * stride[i];
    io.push_back({next_uid, span, false});
    auto attr = dg::TensorAttr().set_name(name).set_uid(next_uid++).set_dim(std::move(dim));
    attr.set_stride(std::move(stride));
    return g.tensor(attr);
  }
  void output(const dg::TensorPtr& t, int64_t elements) {
    t->set_output(true).set_uid(next_uid);
    io.push_back({next_uid++, elements, true});
  }
};

void build_relus(dg::Graph& g, CaseGraph& c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    auto x = c.input(g, "x" + std::to_string(i), {1, 16, 1, 1}, {16, 1, 1, 1});
    c.output(g.relu(x), 16);
  }
}

void build_chain(dg::Graph& g, CaseGraph& c, int64_t n) {
  auto x = c.input(g, "x", {1, 16, 4, 4}, {256, 16, 4, 1});
  auto bias = c.input(g, "bias", {1, 16, 1, 1}, {16, 1, 1, 1});
  for (int64_t i = 0; i < n; ++i) x = (i % 2 == 0) ? g.relu(x) : g.bias(x, bias);
  c.output(x, 256);
}

void build_concat(dg::Graph& g, CaseGraph& c, int64_t n) {
  std::vector<dg::TensorPtr> xs;
  for (int64_t i = 0; i < n; ++i) xs.push_back(c.input(g, "x" + std::to_string(i), {1, 1, 4, 4}, {16, 16, 4, 1}));
  c.output(g.concatenate(xs, dg::ConcatenateAttr().set_axis(1)), n * 16);
}

// Channels-last conv blocks beside batched matmul blocks, 6 nodes a block.
void build_mixed(dg::Graph& g, CaseGraph& c, int64_t n) {
  auto x = c.input(g, "x", {1, 16, 8, 8}, {1024, 1, 128, 16});
  auto a = c.input(g, "a", {1, 64, 16}, {1024, 16, 1});
  const int64_t blocks = std::max<int64_t>(1, n / 6);
  for (int64_t b = 0; b < blocks; ++b) {
    const std::string k = std::to_string(b);
    auto w = c.input(g, "w" + k, {16, 16, 3, 3}, {144, 1, 48, 16});
    auto bias = c.input(g, "b" + k, {1, 16, 1, 1}, {16, 1, 16, 16});
    auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
    x = g.relu(g.bias(y, bias));
    auto m = c.input(g, "m" + k, {1, 16, 16}, {256, 16, 1});
    auto s = c.input(g, "s" + k, {1, 1, 1}, {1, 1, 1});
    a = g.gelu(g.scale(g.matmul(a, m, dg::MatmulAttr()), s));
  }
  c.output(x, 1024);
  c.output(a, 1024);
}

void build_case(const std::string& name, dg::Graph& g, CaseGraph& c, int64_t n) {
  g.set_io_data_type(dg::DataType::FLOAT).set_intermediate_data_type(dg::DataType::FLOAT)
      .set_compute_data_type(dg::DataType::FLOAT);
  if (name == "relus") build_relus(g, c, n);
  else if (name == "chain") build_chain(g, c, n);
  else if (name == "concat") build_concat(g, c, n);
  else build_mixed(g, c, n);
}

// ---- measuring, in the child

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// On a shared machine the CPU time (all threads) shows the work done while scheduled.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

int64_t status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t len = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, len, field) == 0) return std::stoll(line.substr(len + 1));
  return -1;
}

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+), so each stage's peak is its own.
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
}

class Child {
 public:
  explicit Child(int fd) : fd_(fd) {}

  void say(const std::string& line) {
    const std::string s = line + "\n";
    if (write(fd_, s.data(), s.size()) < 0) _exit(4);
  }

  template <class Fn>
  bool stage(const char* name, Fn&& fn) {
    say(std::string("begin ") + name);
    reset_peak_rss();
    const double t0 = now_seconds(), c0 = cpu_seconds();
    dg::Status s = fn();
    const double dt = now_seconds() - t0, dc = cpu_seconds() - c0;
    say(std::string("stage ") + name + " " + std::to_string(dt) + " " + std::to_string(status_kb("VmHWM:")) + " " +
        std::to_string(dc));
    if (!s.ok()) say(std::string("error ") + name + ": " + s.to_string());
    return s.ok();
  }

 private:
  int fd_;
};

dg::Status execute_once(dg::Graph& g, const dg::Handle& h, const CaseGraph& c) {
  std::vector<std::vector<float>> buffers;
  dg::UidVariantPack pack;
  uint32_t seed = 12345;
  for (const auto& t : c.io) {
    buffers.emplace_back(static_cast<size_t>(t.elements), std::nanf(""));
    if (!t.is_output)
      for (auto& v : buffers.back()) {
        seed = seed * 1664525u + 1013904223u;  // a 32-bit LCG: values in [-0.5, 0.5)
        v = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
      }
    pack[t.uid] = buffers.back().data();
  }
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  std::vector<std::byte> workspace(static_cast<size_t>(ws));
  if (auto s = g.execute(h, pack, workspace.data(), ws); !s.ok()) return s;
  for (size_t i = 0; i < c.io.size(); ++i)
    if (c.io[i].is_output)
      for (float v : buffers[i])
        if (std::isnan(v))
          return {dg::ErrorCode::INVALID_VALUE,
                  "output uid " + std::to_string(c.io[i].uid) + " has unwritten (NaN) elements"};
  return {};
}

// The device the graphs are planned for (--device cpu|cuda): on CUDA the vendor and JIT engines
// take part in every survey too.
dg::Device g_device = dg::Device::cpu();
// --engines a,b: plan with only these engines (e.g. without the vendor libraries, whose own
// resident memory is a floor every CUDA run pays).
std::vector<std::string> g_engines;

void run_child(int fd, const std::string& name, bool from_json, int64_t n, int64_t execute_max) {
  Child out(fd);
  dg::Handle h(g_device);
  dg::Graph g;
  CaseGraph c;
  std::string text;
  if (from_json) {
    dg::Graph source;
    const bool written = out.stage("to_json", [&] {
      build_case(name, source, c, n);
      text = source.to_json();
      return dg::Status{};
    });
    if (!written) return;
    out.say("json_mb " + std::to_string(static_cast<double>(text.size()) / 1e6));
  }
  const bool built = out.stage("build", [&] {
    if (from_json) return dg::Graph::from_json(text, g);
    build_case(name, g, c, n);
    return dg::Status{};
  });
  if (!built) return;
  std::string().swap(text);
  out.say("nodes " + std::to_string(dg::introspect::node_count(g)));
  g.select_engines(g_engines);
  if (!out.stage("validate", [&] { return g.validate(); })) return;
  if (!out.stage("lower", [&] { return g.build_operation_graph(h); })) return;
  if (!out.stage("plans", [&] { return g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); })) return;
  if (!out.stage("support", [&] { return g.check_support(h); })) return;
  if (!out.stage("build_plans", [&] { return g.build_plans(h, dg::BuildPlanPolicy::HEURISTICS_CHOICE); })) return;
  if (n <= execute_max && !out.stage("execute", [&] { return execute_once(g, h, c); })) return;
  std::vector<dg::introspect::TensorView> tensors;
  if (dg::introspect::tensors(g, tensors).ok()) out.say("tensors " + std::to_string(tensors.size()));
  out.say("partitions " + std::to_string(dg::introspect::partitions(g).size()));
  out.say("done");
}

// ---- the parent: one child per run, a table row per run

const std::vector<std::string> kStages{"build", "validate", "lower", "plans", "support", "build_plans", "execute"};

struct RunResult {
  std::map<std::string, double> seconds, cpu_seconds;
  std::vector<std::pair<std::string, int64_t>> hwm_kb;  // in stage order
  std::map<std::string, std::string> info;
  std::string begun, error;
  bool done = false;
};

RunResult parse(const std::string& text) {
  RunResult r;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "begin") {
      ls >> r.begun;
    } else if (key == "stage") {
      std::string stage;
      double s = 0, cpu = 0;
      int64_t kb = 0;
      ls >> stage >> s >> kb >> cpu;
      r.seconds[stage] = s;
      r.cpu_seconds[stage] = cpu;
      r.hwm_kb.emplace_back(stage, kb);
    } else if (key == "error") {
      r.error = line.substr(6);
    } else if (key == "done") {
      r.done = true;
    } else {
      std::string value;
      ls >> value;
      r.info[key] = value;
    }
  }
  return r;
}

struct Limits {
  int timeout_s = 300;
  int64_t mem_limit_mb = 8192;
  int64_t execute_max = 10000;
};

RunResult run_in_child(const std::string& name, bool from_json, int64_t n, const Limits& lim, std::string& ending) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (lim.mem_limit_mb > 0) {  // 0: none (CUDA reserves far more address space than it uses)
      const rlim_t bytes = static_cast<rlim_t>(lim.mem_limit_mb) << 20;
      rlimit as{bytes, bytes};
      setrlimit(RLIMIT_AS, &as);
    }
    alarm(static_cast<unsigned>(lim.timeout_s));
    try {
      run_child(fds[1], name, from_json, n, lim.execute_max);
    } catch (const std::bad_alloc&) {
      Child(fds[1]).say("error out of memory (address space limit " + std::to_string(lim.mem_limit_mb) + " MB)");
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(k));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r = parse(text);
  if (WIFSIGNALED(status))
    ending = WTERMSIG(status) == SIGALRM ? "timeout > " + std::to_string(lim.timeout_s) + " s in " + r.begun
                                         : std::string("killed by ") + strsignal(WTERMSIG(status)) + " in " + r.begun;
  else if (!r.error.empty())
    ending = r.error;
  return r;
}

std::string cell(const RunResult& r, const std::string& stage) {
  auto it = r.seconds.find(stage);
  if (it == r.seconds.end()) return "-";
  char b[32];
  std::snprintf(b, sizeof b, it->second < 10 ? "%.3f" : "%.1f", it->second);
  return b;
}

// Wall and CPU seconds of the build steps, from build (from_json) to build_plans.
std::string total_cell(const RunResult& r) {
  double wall = 0, cpu = 0;
  for (const auto& s : kStages)
    if (s != "execute" && r.seconds.count(s)) wall += r.seconds.at(s), cpu += r.cpu_seconds.at(s);
  char b[48];
  std::snprintf(b, sizeof b, "%.2f (%.2f)", wall, cpu);
  return b;
}

// The largest per-stage peak, and the first stage that came within 2% of it: where the memory
// was taken (later stages keep what earlier ones hold).
std::string peak_cell(const RunResult& r) {
  int64_t kb = -1;
  for (const auto& [stage, v] : r.hwm_kb) kb = std::max(kb, v);
  if (kb < 0) return "-";
  std::string at;
  for (const auto& [stage, v] : r.hwm_kb)
    if (at.empty() && v * 50 >= kb * 49) at = stage;
  char b[64];
  std::snprintf(b, sizeof b, "%.0f (%s)", static_cast<double>(kb) / 1024.0, at.c_str());
  return b;
}

void print_machine() {
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model = "unknown";
  int processors = 0;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown") model = line.substr(line.find(':') + 2);
    if (line.rfind("processor", 0) == 0) ++processors;
  }
  std::ifstream mem("/proc/meminfo");
  std::getline(mem, line);
  std::ifstream load("/proc/loadavg");
  std::string load_avg;
  std::getline(load, load_avg);
  std::printf("machine: %s, %d logical CPUs (%u usable), %s; load average %s\n", model.c_str(), processors,
              std::thread::hardware_concurrency(), line.c_str(), load_avg.c_str());
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

std::string value_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> sizes{"1000", "10000", "100000"}, cases{"relus", "chain", "concat", "mixed"},
      sources{"builder", "json"};
  Limits lim;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--n") sizes = split(value);
    else if (flag == "--cases") cases = split(value);
    else if (flag == "--sources") sources = split(value);
    else if (flag == "--timeout") lim.timeout_s = std::stoi(value);
    else if (flag == "--mem-limit-mb") lim.mem_limit_mb = std::stoll(value);
    else if (flag == "--execute-max") lim.execute_max = std::stoll(value);
    else if (flag == "--engines") g_engines = split(value);
    else if (flag == "--device" && (value == "cpu" || value == "cuda"))
      g_device = value == "cuda" ? dg::Device::cuda(0) : dg::Device::cpu();
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  print_machine();
  // Named, not opened: a CUDA context made here would not survive into the forked children.
  std::printf("graphs planned for: %s; engines: %s\n", g_device.to_string().c_str(),
              g_engines.empty() ? "all" : value_list(g_engines).c_str());
  std::printf("wall seconds per stage; build steps = build (or from_json) to build_plans; peak RSS in MB (VmHWM)\n"
              "and the stage that reached it; each run in a fresh process (limits %d s, %lld MB of address space)\n\n",
              lim.timeout_s, static_cast<long long>(lim.mem_limit_mb));
  std::printf("| case | source | N | nodes | tensors | partitions | JSON MB | to_json |");
  for (const auto& s : kStages) std::printf(" %s |", s.c_str());
  std::printf(" build steps s (cpu s) | peak RSS MB | notes |\n|");
  for (size_t k = 0; k < 11 + kStages.size(); ++k) std::printf("---|");
  std::printf("\n");
  for (const auto& c : cases)
    for (const auto& src : sources)
      for (const auto& n : sizes) {
        std::string ending;
        const RunResult r = run_in_child(c, src == "json", std::stoll(n), lim, ending);
        auto info = [&](const char* k) {
          auto it = r.info.find(k);
          return it == r.info.end() ? std::string("-") : it->second;
        };
        std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |", c.c_str(), src.c_str(), n.c_str(),
                    info("nodes").c_str(), info("tensors").c_str(), info("partitions").c_str(),
                    info("json_mb").substr(0, 5).c_str(), cell(r, "to_json").c_str());
        for (const auto& s : kStages) std::printf(" %s |", cell(r, s).c_str());
        std::printf(" %s | %s | %s |\n", total_cell(r).c_str(), peak_cell(r).c_str(), ending.c_str());
        std::fflush(stdout);
      }
  return 0;
}
