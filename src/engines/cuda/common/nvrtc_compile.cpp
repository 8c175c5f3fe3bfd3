#include "engines/cuda/common/nvrtc_compile.hpp"

#include <chrono>
#include <mutex>

#include "core/hash.hpp"
#include "core/log.hpp"
#include "engines/cuda/common/kernel_config.hpp"
#include "engines/cuda/common/kernel_sources.hpp"
#include "planning/kernel_cache.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda {

std::string nvrtc_arch(int sm_version) {
  const std::string base = "sm_" + std::to_string(sm_version);
  return sm_version == 90 ? base + "a" : base;
}

namespace {

std::mutex serialized_mutex;
std::vector<std::string> serialized;  // serialized_wgmma_compiles()

// The generated source's KernelConfig struct (its tile, stages, epilogue), or "" when it has none.
std::string kernel_config_text(const std::string& source) {
  const size_t begin = source.find(std::string("struct ") + kKernelConfig + " {");
  if (begin == std::string::npos) return "";
  const size_t end = source.find("\n};", begin);
  return source.substr(begin, end == std::string::npos ? std::string::npos : end + 3 - begin);
}

// ptxas's report in NVRTC's log: a kernel whose wgmma it serialized is recorded and logged.
void read_ptxas_report(const std::string& log, const std::string& name, const std::string& source) {
  if (!ptxas_serialized_wgmma(log)) return;
  const std::string what = name + "\n" + kernel_config_text(source);
  DG_LOG(INFO) << "nvrtc: ptxas serialized the wgmma of " << what;
  const std::lock_guard<std::mutex> lock(serialized_mutex);
  serialized.push_back(what);
}

// The log's warning and error lines (the report's per-function resource lines are for DEBUG).
std::string log_findings(const std::string& log) {
  std::string out;
  size_t at = 0;
  while (at < log.size()) {
    size_t end = log.find('\n', at);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(at, end - at);
    const bool resources =
        line.find("ptxas info") != std::string::npos || line.find("ptxas         .") != std::string::npos;
    if (!resources || line.find("Performance Loss") != std::string::npos)
      out += (out.empty() ? "" : "\n") + line;
    at = end + 1;
  }
  return out;
}

}  // namespace

bool ptxas_serialized_wgmma(const std::string& log) {
  return log.find("wgmma.mma_async instructions are serialized") != std::string::npos;
}

std::vector<std::string> serialized_wgmma_compiles() {
  const std::lock_guard<std::mutex> lock(serialized_mutex);
  return serialized;
}

const std::vector<std::string>& nvrtc_base_options() {
  static const std::vector<std::string> kOptions{"--std=c++17", "-DNDEBUG"};
  return kOptions;
}

Status nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                     std::vector<uint8_t>& cubin) {
  return nvrtc_compile(source, name, arch, {}, cubin, nullptr);
}

Status nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                     const std::vector<std::string>& extra_options, std::vector<uint8_t>& cubin, std::string* log_out) {
  const NvrtcApi* nv = nvrtc();
  if (!nv) return {ErrorCode::DEVICE_NOT_AVAILABLE, "cannot compile '" + name + "': " + nvrtc_error()};
  std::vector<const char*> header_names, header_texts;
  std::vector<std::string> texts;  // NUL-terminated copies (the embedded arrays are, but keep it explicit)
  texts.reserve(kEmbeddedKernelCount);
  for (size_t i = 0; i < kEmbeddedKernelCount; ++i) {
    texts.emplace_back(kEmbeddedKernels[i].text, kEmbeddedKernels[i].size);
    header_names.push_back(kEmbeddedKernels[i].name);
  }
  for (const auto& t : texts) header_texts.push_back(t.c_str());
  nvrtcProgram prog = nullptr;
  nvrtcResult r = nv->nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), static_cast<int>(header_names.size()),
                                         header_texts.data(), header_names.data());
  if (r != NVRTC_SUCCESS)
    return {ErrorCode::COMPILATION_FAILED, "nvrtcCreateProgram(" + name + "): " + nv->nvrtcGetErrorString(r)};
  std::vector<std::string> opts = nvrtc_base_options();
  opts.push_back("--gpu-architecture=" + arch);
  // ptxas's report costs nothing measurable and is how a serialized wgmma (C7518) is seen at all.
  opts.push_back("--ptxas-options=-v");
  opts.insert(opts.end(), extra_options.begin(), extra_options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  r = nv->nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  std::string log;
  if (nv->nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (nv->nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  Status status;
  if (r != NVRTC_SUCCESS) {
    status = {ErrorCode::COMPILATION_FAILED,
              "NVRTC failed to compile '" + name + "' for " + arch + ": " + nv->nvrtcGetErrorString(r) + "\n" + log};
  } else {
    size_t size = 0;
    r = nv->nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS) {
      cubin.resize(size);
      r = nv->nvrtcGetCUBIN(prog, reinterpret_cast<char*>(cubin.data()));
    }
    if (r != NVRTC_SUCCESS)
      status = {ErrorCode::COMPILATION_FAILED, "nvrtcGetCUBIN(" + name + "): " + nv->nvrtcGetErrorString(r)};
  }
  nv->nvrtcDestroyProgram(&prog);
  read_ptxas_report(log, name, source);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string findings = log_findings(log);
  DG_LOG(INFO) << "nvrtc: compiled '" << name << "' for " << arch << " in " << ms << " ms"
               << (findings.empty() ? "" : "; log:\n" + findings);
  DG_LOG(DEBUG) << "nvrtc: ptxas's report for '" << name << "':\n" << log;
  if (log_out) *log_out = std::move(log);
  return status;
}

Status compile_cached(const Target& t, const std::string& source, const std::string& name,
                      std::vector<uint8_t>& cubin) {
  const std::string arch = nvrtc_arch(t.info().sm_version);
  auto compile = [&](std::vector<uint8_t>& out) { return nvrtc_compile(source, name, arch, out); };
  if (!nvrtc()) return compile(cubin);  // the error says NVRTC is missing; nothing to key on
  KernelKey key;
  // The embedded headers are part of what is compiled: hash them with the source.
  uint64_t h = hash64(source);
  for (size_t i = 0; i < kEmbeddedKernelCount; ++i) h = hash64(kEmbeddedKernels[i].text, kEmbeddedKernels[i].size, h);
  key.source_hash = h;
  for (const auto& o : nvrtc_base_options()) key.options += o + " ";
  key.arch = arch;
  key.compiler_version = "nvrtc " + std::to_string(nvrtc_version() / 10) + "." + std::to_string(nvrtc_version() % 10);
  // The graph's own cache when it has one (counted, maybe on disk), else the process's.
  KernelCacheImpl& cache = t.kernel_cache ? *t.kernel_cache : process_kernel_cache();
  return cache.get_or_compile(key, compile, cubin);
}

}  // namespace dnngraph::cuda
