#include "engines/cudnn/vendor_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/log.hpp"

namespace dnngraph::vendor {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Files in `dir` whose name starts with `prefix`, newest version first (libcudnn.so.9.19.0 before .so.9).
std::vector<std::string> files_with_prefix(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

std::vector<fs::path> python_dirs(const fs::path& parent) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) return out;
  for (const auto& e : fs::directory_iterator(parent, ec))
    if (e.path().filename().string().rfind("python3", 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

// One attempt: dlopen `name`, then ask `accept`. Records the outcome.
bool try_open(const std::string& name, const std::string& how, const LibrarySpec& spec, const Accept& accept,
              LoadedLibrary& out) {
  dlerror();
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    out.searched.push_back(name + how + ": " + (e ? e : "not found"));
    DG_LOG(INFO) << spec.display << ": tried " << out.searched.back();
    return false;
  }
  if (std::string why = accept ? accept(lib) : std::string(); !why.empty()) {
    out.searched.push_back(name + how + ": loaded, but " + why);
    DG_LOG(INFO) << spec.display << ": tried " << out.searched.back();
    return false;  // left open: unloading a half-initialized vendor library is not safe
  }
  out.handle = lib;
  out.path = name;
  // The file actually loaded (a soname resolves to a path through the loader's search).
  struct link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) out.path = map->l_name;
  out.searched.push_back(name + how + ": loaded " + out.path);
  DG_LOG(INFO) << spec.display << ": loaded " << out.path;
  return true;
}

bool scan_folder(const fs::path& dir, const std::string& how, const LibrarySpec& spec, const Accept& accept,
                 LoadedLibrary& out) {
  for (const auto& f : files_with_prefix(dir, spec.file_prefix))
    if (try_open(f, how, spec, accept, out)) return true;
  return false;
}

}  // namespace

std::vector<std::string> python_site_dirs() {
  std::vector<fs::path> roots;
  std::vector<std::string> sites;
  if (auto s = env("DNNGRAPH_PYTHON_SITE"); !s.empty()) sites.push_back(s);
  if (auto v = env("VIRTUAL_ENV"); !v.empty()) roots.emplace_back(fs::path(v) / "lib");
  const std::string path = env("PATH");
  for (size_t pos = 0; pos <= path.size();) {
    size_t end = path.find(':', pos);
    if (end == std::string::npos) end = path.size();
    const fs::path exe = fs::path(path.substr(pos, end - pos)) / "python3";
    std::error_code ec;
    if (!exe.parent_path().empty() && fs::exists(exe, ec)) {
      roots.push_back(exe.parent_path().parent_path() / "lib");
      break;
    }
    pos = end + 1;
  }
  if (auto h = env("HOME"); !h.empty()) roots.emplace_back(fs::path(h) / ".local/lib");
  roots.emplace_back("/usr/local/lib");
  roots.emplace_back("/usr/lib");
  for (const auto& r : roots)
    for (const auto& py : python_dirs(r)) {
      sites.push_back((py / "site-packages").string());
      sites.push_back((py / "dist-packages").string());
    }
  return sites;
}

LoadedLibrary load_library(const LibrarySpec& spec, const Accept& accept) {
  LoadedLibrary out;
  // 1. An explicit file or folder.
  if (auto p = env(spec.env_var.c_str()); !p.empty()) {
    std::error_code ec;
    const std::string how = " (" + spec.env_var + ")";
    if (fs::is_directory(p, ec)) {
      if (scan_folder(p, how, spec, accept, out)) return out;
      if (files_with_prefix(p, spec.file_prefix).empty())
        out.searched.push_back(spec.env_var + "=" + p + ": no " + spec.file_prefix + "* in it");
    } else if (try_open(p, how, spec, accept, out)) {
      return out;
    }
  }
  // 2. The system loader (LD_LIBRARY_PATH, ldconfig).
  for (const auto& n : spec.sonames)
    if (try_open(n, " (system loader)", spec, accept, out)) return out;
  // 3. Python wheels.
  bool any_wheel = false;
  for (const auto& site : python_site_dirs())
    for (const auto& sub : spec.wheel_dirs) {
      const fs::path dir = fs::path(site) / sub;
      if (files_with_prefix(dir, spec.file_prefix).empty()) continue;
      any_wheel = true;
      if (scan_folder(dir, " (python wheel)", spec, accept, out)) return out;
    }
  if (!any_wheel && !spec.wheel_dirs.empty()) {
    std::string dirs;
    for (const auto& d : spec.wheel_dirs) dirs += (dirs.empty() ? "" : " or ") + d;
    out.searched.push_back("python wheels: no " + dirs + " with " + spec.file_prefix + "* in any site-packages");
    DG_LOG(INFO) << spec.display << ": " << out.searched.back();
  }
  // 4. Fixed folders (the CUDA toolkit's).
  for (const auto& d : spec.extra_dirs) {
    if (scan_folder(d, "", spec, accept, out)) return out;
    if (files_with_prefix(d, spec.file_prefix).empty()) out.searched.push_back(d + ": no " + spec.file_prefix + "*");
  }
  return out;
}

std::string not_found_message(const LibrarySpec& spec, const LoadedLibrary& lib) {
  std::string s = spec.display + " not found (searched: ";
  for (size_t i = 0; i < lib.searched.size(); ++i) s += (i ? "; " : "") + lib.searched[i];
  return s + ")";
}

}  // namespace dnngraph::vendor
