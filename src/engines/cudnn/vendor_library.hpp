// Finding and dlopen'ing a vendor library (cuDNN, cuBLASLt) by a documented search order, keeping
// every path tried so that the log and `dnngraph info` can say what was searched and why it failed.
// The folders searched for Python wheels are src/runtime/library_search.hpp's, as for NVRTC.
#pragma once
#include <functional>
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

}  // namespace dnngraph::vendor
