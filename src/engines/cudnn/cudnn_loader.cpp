// Loading cuDNN (dlopen, documented search order) and cuDNN's own words for its statuses.
#include <cctype>

#include "engines/cudnn/cudnn_api.hpp"

namespace dnngraph::cudnn {
namespace {

// cuDNN 9's backend API (the enum values declared in cudnn_api.hpp) is what dnngraph speaks.
constexpr size_t kMinVersion = 90000, kMaxVersion = 100000;

vendor::LibrarySpec spec() {
  return {"cuDNN", "DNNGRAPH_CUDNN_PATH", {"libcudnn.so.9"}, "libcudnn.so", {"nvidia/cudnn/lib"},
          {"/usr/local/cuda/lib64"}};
}

std::string accept(void* handle, CudnnApi& api, size_t& version) {
  std::string missing;
  if (!resolve_api(vendor::dlsym_lookup, handle, api, missing)) return "it lacks " + missing + " (cuDNN 9 is needed)";
  version = api.cudnnGetVersion();
  if (version < kMinVersion || version >= kMaxVersion)
    return "it is cuDNN " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
           " (cuDNN 9 is needed)";
  return {};
}

const vendor::LoadedApi<CudnnApi>& loaded() {
  static const auto kLoaded = vendor::load_api<CudnnApi>(spec(), accept);
  return kLoaded;
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

bool resolve_api(vendor::SymbolLookup lookup, void* context, CudnnApi& api, std::string& missing) {
  if (!vendor::resolve_symbols(lookup, context, {DG_CUDNN_ENTRY_POINTS(DG_VENDOR_SYMBOL)}, missing)) return false;
  // Optional: older libraries lack them, and dnngraph works around their absence.
  for (const vendor::Symbol& s : {DG_CUDNN_OPTIONAL_ENTRY_POINTS(DG_VENDOR_SYMBOL)}) *s.slot = lookup(context, s.name);
  return true;
}

const CudnnApi* api() { return loaded().usable(); }
const std::string& error() { return loaded().report.error; }
const vendor::LibraryReport& library_report() { return loaded().report; }

}  // namespace dnngraph::cudnn
