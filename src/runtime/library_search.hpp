// Where run-time libraries are looked for: the pieces shared by the CUDA driver/NVRTC loader
// (src/runtime/cuda/loader.cpp) and the vendor engines' loader (src/runtime/vendor_library.cpp).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace dnngraph::library_search {

// The environment variable's value, "" when unset.
std::string env(const char* name);

// Files in `dir` whose name starts with `prefix`, newest version first (libcudnn.so.9.19.0 before
// libcudnn.so.9, libnvrtc.so.13 before .so.12); empty when `dir` is not a folder.
std::vector<std::string> files_with_prefix(const std::filesystem::path& dir, const std::string& prefix);

// site-packages / dist-packages folders where pip puts the nvidia-* wheels: $DNNGRAPH_PYTHON_SITE,
// $VIRTUAL_ENV, the python3 first on PATH, ~/.local, /usr/local and /usr.
std::vector<std::filesystem::path> python_site_dirs();

}  // namespace dnngraph::library_search
