// Finding and dlopen'ing a vendor library (cuDNN, cuBLASLt) by a documented search order, keeping
// every path tried so that the log and `dnngraph info` can say what was searched and why it failed.
// The folders searched for Python wheels are src/runtime/library_search.hpp's, as for NVRTC.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace dnngraph::vendor {

struct LibrarySpec {
  std::string display;                   // "cuDNN"
  std::string env_var;                   // "DNNGRAPH_CUDNN_PATH": a file, or a folder to scan
  std::vector<std::string> sonames;      // for the system loader: {"libcudnn.so.9"}
  std::string file_prefix;               // folder scans take files starting with it: "libcudnn.so"
  std::vector<std::string> wheel_dirs;   // under each site-packages: {"nvidia/cudnn/lib"}
  std::vector<std::string> extra_dirs;   // last: {"/usr/local/cuda/lib64"}
};

struct LoadedLibrary {
  void* handle = nullptr;  // dlopen handle; null when nothing usable was found
  std::string path;        // the file the symbols came from
  std::vector<std::string> searched;  // one line per path tried, with its outcome
};

// Called with each library that dlopen accepted: returns "" when it is usable, else why not (too
// old, a symbol missing); the search then goes on.
using Accept = std::function<std::string(void* handle)>;

// Tries, in order: spec.env_var, the system loader (sonames), the wheel folders under every
// Python site-packages folder found, spec.extra_dirs. Logs each attempt at DNNGRAPH_LOG_LEVEL=2.
LoadedLibrary load_library(const LibrarySpec& spec, const Accept& accept);

// "<display> not found (searched: a; b; c)": for logs, reasons and `dnngraph info`.
std::string not_found_message(const LibrarySpec& spec, const LoadedLibrary& lib);

// What became of a vendor library's search: its version when usable, else why not.
struct LibraryReport {
  bool ok = false;
  size_t version = 0;                 // the library's own number (cudnnGetVersion: 91900)
  std::string path;                   // the file used
  std::string error;                  // not_found_message when !ok
  std::vector<std::string> searched;  // one line per path tried
};

// Called with each library dlopen accepted: "" with `version` set when it is usable, else why not.
using AcceptVersioned = std::function<std::string(void* handle, size_t& version)>;
// load_library, then the report (logged at INFO when nothing usable was found).
LibraryReport load_vendor_library(const LibrarySpec& spec, const AcceptVersioned& accept);

// Entry points by name: through dlsym on a loaded library, or a test's table.
using SymbolLookup = void* (*)(void* context, const char* name);
void* dlsym_lookup(void* library, const char* name);
struct Symbol {
  const char* name;
  void** slot;
};
// Fills every slot; false, with the first missing name in `missing`, when one is absent.
bool resolve_symbols(SymbolLookup lookup, void* context, std::initializer_list<Symbol> symbols, std::string& missing);

// A vendor library's entry points are listed once, as X(return type, name, parameters), and the
// list expanded twice: into its table's members (DG_VENDOR_ENTRY_POINT) and into the names that
// resolve_symbols fills, for a table called `api` (DG_VENDOR_SYMBOL).
#define DG_VENDOR_ENTRY_POINT(ret, name, params) ret(*name) params;
#define DG_VENDOR_SYMBOL(ret, name, params) ::dnngraph::vendor::Symbol{#name, reinterpret_cast<void**>(&api.name)},

// A vendor library's table of entry points, loaded once by its spec.
template <class Api>
struct LoadedApi {
  Api api{};
  LibraryReport report;
  const Api* usable() const { return report.ok ? &api : nullptr; }
};
// `accept(handle, api, version)` fills the table and says "" when the library is usable, else why not.
template <class Api>
LoadedApi<Api> load_api(const LibrarySpec& spec, std::string (*accept)(void* handle, Api& api, size_t& version)) {
  LoadedApi<Api> out;
  out.report = load_vendor_library(spec, [&](void* handle, size_t& version) {
    Api api{};
    std::string why = accept(handle, api, version);
    if (why.empty()) out.api = api;
    return why;
  });
  return out;
}

}  // namespace dnngraph::vendor
