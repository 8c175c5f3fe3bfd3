// Loading cuBLASLt (dlopen, documented search order) and cuBLASLt's own words for its statuses.
#include <dlfcn.h>

#include "engines/cublaslt/cublaslt_api.hpp"

namespace dnngraph::cublaslt {
namespace {

// cuBLASLt 12.0 or newer: the heuristic result and algo layouts declared in cublaslt_api.hpp.
constexpr size_t kMinVersion = 120000;

struct State {
  LtApi api{};
  vendor::LibraryReport report;
};

vendor::LibrarySpec spec() {
  return {"cuBLASLt", "DNNGRAPH_CUBLASLT_PATH", {"libcublasLt.so.13", "libcublasLt.so.12"}, "libcublasLt.so",
          {"nvidia/cu13/lib", "nvidia/cublas/lib"}, {"/usr/local/cuda/lib64"}};
}

void* dlsym_lookup(void* lib, const char* name) { return dlsym(lib, name); }

State load_state() {
  State s;
  s.report = vendor::load_vendor_library(spec(), [&](void* handle, size_t& version) -> std::string {
    LtApi api{};
    std::string missing;
    if (!resolve_api(dlsym_lookup, handle, api, missing)) return "it lacks " + missing + " (cuBLASLt 12 is needed)";
    const size_t v = api.cublasLtGetVersion();
    if (v < kMinVersion) return "it is cuBLASLt " + std::to_string(v) + " (12.0 or newer is needed)";
    s.api = api;
    version = v;
    return {};
  });
  return s;
}

const State& state() {
  static const State s = load_state();
  return s;
}

}  // namespace

std::string status_text(const LtApi& api, cublasStatus_t s) {
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(s) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(s) : nullptr;
  std::string out = name && *name ? name : "cuBLAS status " + std::to_string(s);
  if (text && *text) out += std::string(" (") + text + ")";
  return out;
}

bool resolve_api(SymbolLookup lookup, void* context, LtApi& a, std::string& missing) {
  const std::pair<const char*, void**> syms[] = {
      {"cublasLtGetVersion", reinterpret_cast<void**>(&a.cublasLtGetVersion)},
      {"cublasLtGetStatusName", reinterpret_cast<void**>(&a.cublasLtGetStatusName)},
      {"cublasLtGetStatusString", reinterpret_cast<void**>(&a.cublasLtGetStatusString)},
      {"cublasLtCreate", reinterpret_cast<void**>(&a.cublasLtCreate)},
      {"cublasLtDestroy", reinterpret_cast<void**>(&a.cublasLtDestroy)},
      {"cublasLtMatmulDescCreate", reinterpret_cast<void**>(&a.cublasLtMatmulDescCreate)},
      {"cublasLtMatmulDescDestroy", reinterpret_cast<void**>(&a.cublasLtMatmulDescDestroy)},
      {"cublasLtMatmulDescSetAttribute", reinterpret_cast<void**>(&a.cublasLtMatmulDescSetAttribute)},
      {"cublasLtMatrixLayoutCreate", reinterpret_cast<void**>(&a.cublasLtMatrixLayoutCreate)},
      {"cublasLtMatrixLayoutDestroy", reinterpret_cast<void**>(&a.cublasLtMatrixLayoutDestroy)},
      {"cublasLtMatrixLayoutSetAttribute", reinterpret_cast<void**>(&a.cublasLtMatrixLayoutSetAttribute)},
      {"cublasLtMatmulPreferenceCreate", reinterpret_cast<void**>(&a.cublasLtMatmulPreferenceCreate)},
      {"cublasLtMatmulPreferenceDestroy", reinterpret_cast<void**>(&a.cublasLtMatmulPreferenceDestroy)},
      {"cublasLtMatmulPreferenceSetAttribute", reinterpret_cast<void**>(&a.cublasLtMatmulPreferenceSetAttribute)},
      {"cublasLtMatmulAlgoGetHeuristic", reinterpret_cast<void**>(&a.cublasLtMatmulAlgoGetHeuristic)},
      {"cublasLtMatmulAlgoInit", reinterpret_cast<void**>(&a.cublasLtMatmulAlgoInit)},
      {"cublasLtMatmulAlgoCheck", reinterpret_cast<void**>(&a.cublasLtMatmulAlgoCheck)},
      {"cublasLtMatmulAlgoConfigSetAttribute", reinterpret_cast<void**>(&a.cublasLtMatmulAlgoConfigSetAttribute)},
      {"cublasLtMatmulAlgoConfigGetAttribute", reinterpret_cast<void**>(&a.cublasLtMatmulAlgoConfigGetAttribute)},
      {"cublasLtMatmul", reinterpret_cast<void**>(&a.cublasLtMatmul)},
  };
  for (const auto& [name, slot] : syms) {
    *slot = lookup(context, name);
    if (!*slot) {
      missing = name;
      return false;
    }
  }
  return true;
}

const LtApi* api() { return state().report.ok ? &state().api : nullptr; }
const std::string& error() { return state().report.error; }
const vendor::LibraryReport& library_report() { return state().report; }

}  // namespace dnngraph::cublaslt
