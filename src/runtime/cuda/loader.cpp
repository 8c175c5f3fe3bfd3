// dlopen of the CUDA driver and NVRTC. Every path tried is remembered (and logged at
// DNNGRAPH_LOG_LEVEL=2) so that `dnngraph info` can say what was searched and why it failed.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "core/log.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/library_search.hpp"
#include "runtime/vendor_library.hpp"

namespace dnngraph::cuda {
namespace {

namespace fs = std::filesystem;

using library_search::env;
using library_search::files_with_prefix;
using library_search::python_site_dirs;

// X_V2 entries of DG_CUDA_DRIVER_ENTRY_POINTS, for a table called `api`.
#define DG_CUDA_V2_SYMBOL(ret, name, params) vendor::Symbol{#name "_v2", reinterpret_cast<void**>(&api.name)},

struct DriverState {
  DriverApi api{};
  bool ok = false;
  std::string error;
  std::vector<std::string> searched;
  int version = 0;
};

void* sym_either(void* lib, const char* a, const char* b) {
  void* p = dlsym(lib, a);
  return p ? p : dlsym(lib, b);
}

DriverState load_driver_state() {
  DriverState s;
  const char* name = "libcuda.so.1";
  dlerror();
  void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    s.searched.push_back(std::string(name) + " (system loader): " + (e ? e : "not found"));
    s.error = "the CUDA driver (libcuda.so.1) could not be loaded: " + std::string(e ? e : "not found") +
              " (is an NVIDIA driver installed?)";
    DG_LOG(INFO) << "cuda: " << s.searched.back();
    return s;
  }
  s.searched.push_back(std::string(name) + " (system loader): loaded");
  DG_LOG(INFO) << "cuda: loaded " << name;
  DriverApi& api = s.api;
  std::string missing;
  if (!vendor::resolve_symbols(vendor::dlsym_lookup, lib,
                               {DG_CUDA_DRIVER_ENTRY_POINTS(DG_VENDOR_SYMBOL, DG_CUDA_V2_SYMBOL)}, missing)) {
    s.error = "the CUDA driver is too old: libcuda.so.1 lacks " + missing + " (CUDA 12.0 or newer is needed)";
    return s;
  }
  // cuda.h 12.8+ maps cuEventElapsedTime to _v2; older drivers have only the first.
  api.cuEventElapsedTime = reinterpret_cast<CUresult (*)(float*, CUevent, CUevent)>(
      sym_either(lib, "cuEventElapsedTime_v2", "cuEventElapsedTime"));
  if (!api.cuEventElapsedTime) {
    s.error = "the CUDA driver lacks cuEventElapsedTime";
    return s;
  }
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    const char* n = nullptr;
    const char* m = nullptr;
    api.cuGetErrorName(r, &n);
    api.cuGetErrorString(r, &m);
    s.error = std::string("cuInit failed: ") + (n ? n : "?") + " (" + (m ? m : "unknown error") + ")";
    DG_LOG(INFO) << "cuda: " << s.error;
    return s;
  }
  api.cuDriverGetVersion(&s.version);
  s.ok = true;
  return s;
}

const DriverState& driver_state() {
  static const DriverState s = load_driver_state();
  return s;
}

struct NvrtcState {
  NvrtcApi api{};
  bool ok = false;
  std::string error;
  std::string path;
  int version = 0;
  std::vector<std::string> searched;
};

// Loads NVRTC's builtins library from `dir` first, so that NVRTC's own dlopen of it (by soname)
// succeeds even when `dir` is not on the loader's path.
void preload_builtins(const fs::path& dir, NvrtcState& s) {
  for (const auto& f : files_with_prefix(dir, "libnvrtc-builtins.so")) {
    if (dlopen(f.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      s.searched.push_back("  builtins " + f + ": loaded");
      return;
    }
  }
}

bool try_nvrtc(const std::string& name, bool by_path, NvrtcState& s) {
  if (by_path) preload_builtins(fs::path(name).parent_path(), s);
  dlerror();
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    s.searched.push_back(name + ": " + (e ? e : "not found"));
    DG_LOG(INFO) << "cuda: NVRTC " << s.searched.back();
    return false;
  }
  NvrtcApi& api = s.api;
  std::string missing;
  if (!vendor::resolve_symbols(vendor::dlsym_lookup, lib, {DG_NVRTC_ENTRY_POINTS(DG_VENDOR_SYMBOL)}, missing)) {
    s.searched.push_back(name + ": loaded, but it lacks " + missing + " (NVRTC 12 or newer is needed)");
    return false;
  }
  int major = 0, minor = 0;
  api.nvrtcVersion(&major, &minor);
  if (major < 12) {
    s.searched.push_back(name + ": NVRTC " + std::to_string(major) + "." + std::to_string(minor) +
                         " is too old (12 or newer is needed)");
    return false;
  }
  Dl_info info{};
  s.path = (dladdr(reinterpret_cast<void*>(api.nvrtcVersion), &info) && info.dli_fname) ? info.dli_fname : name;
  s.version = major * 10 + minor;
  s.searched.push_back(name + ": loaded NVRTC " + std::to_string(major) + "." + std::to_string(minor));
  DG_LOG(INFO) << "cuda: NVRTC " << s.searched.back() << " from " << s.path;
  s.ok = true;
  return true;
}

NvrtcState load_nvrtc_state() {
  NvrtcState s;
  // 1. An explicit file or folder.
  if (auto p = env("DNNGRAPH_NVRTC_PATH"); !p.empty()) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& f : files_with_prefix(p, "libnvrtc.so"))
        if (try_nvrtc(f, true, s)) return s;
      s.searched.push_back("DNNGRAPH_NVRTC_PATH=" + p + ": no libnvrtc.so* in it");
    } else if (try_nvrtc(p, true, s)) {
      return s;
    }
  }
  // 2. The system loader (LD_LIBRARY_PATH, ldconfig).
  for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    if (try_nvrtc(n, false, s)) return s;
  // 3. The toolkit's usual home.
  for (const auto& f : files_with_prefix("/usr/local/cuda/lib64", "libnvrtc.so"))
    if (try_nvrtc(f, true, s)) return s;
  // 4. The nvidia-cuda-nvrtc wheel (nvidia/cuda_nvrtc/lib for CUDA 12, nvidia/cu13/lib for 13).
  for (const auto& site : python_site_dirs()) {
    for (const char* sub : {"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"}) {
      const auto files = files_with_prefix(site / sub, "libnvrtc.so");
      if (files.empty()) continue;
      for (const auto& f : files)
        if (try_nvrtc(f, true, s)) return s;
    }
  }
  s.searched.push_back("python wheels: no nvidia/cu13/lib or nvidia/cuda_nvrtc/lib with libnvrtc.so* found");
  s.error = "NVRTC was not found (set DNNGRAPH_NVRTC_PATH to libnvrtc.so or its folder); searched:";
  for (const auto& line : s.searched) s.error += "\n  " + line;
  return s;
}

const NvrtcState& nvrtc_state() {
  static const NvrtcState s = load_nvrtc_state();
  return s;
}

}  // namespace

const DriverApi* driver() { return driver_state().ok ? &driver_state().api : nullptr; }
const std::string& driver_error() { return driver_state().error; }
int driver_version() { return driver_state().version; }
const std::vector<std::string>& driver_search_log() { return driver_state().searched; }

const NvrtcApi* nvrtc() { return nvrtc_state().ok ? &nvrtc_state().api : nullptr; }
const std::string& nvrtc_error() { return nvrtc_state().error; }
const std::string& nvrtc_path() { return nvrtc_state().path; }
int nvrtc_version() { return nvrtc_state().version; }
const std::vector<std::string>& nvrtc_search_log() { return nvrtc_state().searched; }

}  // namespace dnngraph::cuda
