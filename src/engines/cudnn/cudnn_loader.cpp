// Loading cuDNN (dlopen, documented search order) and cuDNN's own words for its statuses.
#include <dlfcn.h>

#include <cctype>

#include "engines/cudnn/cudnn_api.hpp"

namespace dnngraph::cudnn {
namespace {

// cuDNN 9's backend API (the enum values declared in cudnn_api.hpp) is what dnngraph speaks.
constexpr size_t kMinVersion = 90000, kMaxVersion = 100000;

struct State {
  CudnnApi api{};
  vendor::LibraryReport report;
};

vendor::LibrarySpec spec() {
  return {"cuDNN", "DNNGRAPH_CUDNN_PATH", {"libcudnn.so.9"}, "libcudnn.so", {"nvidia/cudnn/lib"},
          {"/usr/local/cuda/lib64"}};
}

void* dlsym_lookup(void* lib, const char* name) { return dlsym(lib, name); }

State load_state() {
  State s;
  s.report = vendor::load_vendor_library(spec(), [&](void* handle, size_t& version) -> std::string {
    CudnnApi api{};
    std::string missing;
    if (!resolve_api(dlsym_lookup, handle, api, missing)) return "it lacks " + missing + " (cuDNN 9 is needed)";
    const size_t v = api.cudnnGetVersion();
    if (v < kMinVersion || v >= kMaxVersion)
      return "it is cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + " (cuDNN 9 is needed)";
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

std::string knob_type_name(int t) {
#define DG_CUDNN_KNOB_NAME(name, value) #name,
  static const char* kNames[] = {DG_CUDNN_KNOB_TYPES(DG_CUDNN_KNOB_NAME)};
#undef DG_CUDNN_KNOB_NAME
  if (t < 0 || t >= static_cast<int>(KnobType::COUNTS)) return "knob" + std::to_string(t);
  std::string s = kNames[t];
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string status_text(const CudnnApi& api, cudnnStatus_t s) {
  const char* name = api.cudnnGetErrorString ? api.cudnnGetErrorString(s) : nullptr;
  std::string out = name && *name ? name : "cuDNN status " + std::to_string(s);
  if (api.cudnnGetLastErrorString) {
    char msg[1024] = {};
    api.cudnnGetLastErrorString(msg, sizeof(msg));
    if (msg[0]) out += std::string(" (") + msg + ")";
  }
  return out;
}

bool resolve_api(SymbolLookup lookup, void* context, CudnnApi& a, std::string& missing) {
  const std::pair<const char*, void**> required[] = {
      {"cudnnGetVersion", reinterpret_cast<void**>(&a.cudnnGetVersion)},
      {"cudnnGetCudartVersion", reinterpret_cast<void**>(&a.cudnnGetCudartVersion)},
      {"cudnnGetErrorString", reinterpret_cast<void**>(&a.cudnnGetErrorString)},
      {"cudnnCreate", reinterpret_cast<void**>(&a.cudnnCreate)},
      {"cudnnDestroy", reinterpret_cast<void**>(&a.cudnnDestroy)},
      {"cudnnSetStream", reinterpret_cast<void**>(&a.cudnnSetStream)},
      {"cudnnBackendCreateDescriptor", reinterpret_cast<void**>(&a.cudnnBackendCreateDescriptor)},
      {"cudnnBackendDestroyDescriptor", reinterpret_cast<void**>(&a.cudnnBackendDestroyDescriptor)},
      {"cudnnBackendFinalize", reinterpret_cast<void**>(&a.cudnnBackendFinalize)},
      {"cudnnBackendSetAttribute", reinterpret_cast<void**>(&a.cudnnBackendSetAttribute)},
      {"cudnnBackendGetAttribute", reinterpret_cast<void**>(&a.cudnnBackendGetAttribute)},
      {"cudnnBackendExecute", reinterpret_cast<void**>(&a.cudnnBackendExecute)},
  };
  for (const auto& [name, slot] : required) {
    *slot = lookup(context, name);
    if (!*slot) {
      missing = name;
      return false;
    }
  }
  *reinterpret_cast<void**>(&a.cudnnGetLastErrorString) = lookup(context, "cudnnGetLastErrorString");
  *reinterpret_cast<void**>(&a.cudnnBackendPopulateCudaGraph) = lookup(context, "cudnnBackendPopulateCudaGraph");
  *reinterpret_cast<void**>(&a.cudnnBackendUpdateCudaGraph) = lookup(context, "cudnnBackendUpdateCudaGraph");
  return true;
}

const CudnnApi* api() { return state().report.ok ? &state().api : nullptr; }
const std::string& error() { return state().report.error; }
const vendor::LibraryReport& library_report() { return state().report; }

}  // namespace dnngraph::cudnn
