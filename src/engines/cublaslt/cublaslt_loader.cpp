// Loading cuBLASLt (dlopen, documented search order) and cuBLASLt's own words for its statuses.
#include "engines/cublaslt/cublaslt_api.hpp"

namespace dnngraph::cublaslt {
namespace {

// cuBLASLt 12.0 or newer: the heuristic result and algo layouts declared in cublaslt_api.hpp.
constexpr size_t kMinVersion = 120000;

vendor::LibrarySpec spec() {
  return {"cuBLASLt", "DNNGRAPH_CUBLASLT_PATH", {"libcublasLt.so.13", "libcublasLt.so.12"}, "libcublasLt.so",
          {"nvidia/cu13/lib", "nvidia/cublas/lib"}, {"/usr/local/cuda/lib64"}};
}

std::string accept(void* handle, LtApi& api, size_t& version) {
  std::string missing;
  if (!resolve_api(vendor::dlsym_lookup, handle, api, missing)) return "it lacks " + missing + " (cuBLASLt 12 is needed)";
  version = api.cublasLtGetVersion();
  if (version < kMinVersion) return "it is cuBLASLt " + std::to_string(version) + " (12.0 or newer is needed)";
  return {};
}

const vendor::LoadedApi<LtApi>& loaded() {
  static const auto kLoaded = vendor::load_api<LtApi>(spec(), accept);
  return kLoaded;
}

}  // namespace

std::string status_text(const LtApi& api, cublasStatus_t s) {
  const char* name = api.cublasLtGetStatusName ? api.cublasLtGetStatusName(s) : nullptr;
  const char* text = api.cublasLtGetStatusString ? api.cublasLtGetStatusString(s) : nullptr;
  std::string out = name && *name ? name : "cuBLAS status " + std::to_string(s);
  if (text && *text) out += std::string(" (") + text + ")";
  return out;
}

bool resolve_api(vendor::SymbolLookup lookup, void* context, LtApi& api, std::string& missing) {
  return vendor::resolve_symbols(lookup, context, {DG_LT_ENTRY_POINTS(DG_VENDOR_SYMBOL)}, missing);
}

const LtApi* api() { return loaded().usable(); }
const std::string& error() { return loaded().report.error; }
const vendor::LibraryReport& library_report() { return loaded().report; }

}  // namespace dnngraph::cublaslt
