#include "runtime/vendor_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>

#include "core/log.hpp"
#include "runtime/library_search.hpp"

namespace dnngraph::vendor {
namespace {

namespace fs = std::filesystem;

using library_search::env;
using library_search::files_with_prefix;

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

// Paths of the objects loaded in this process whose file name starts with `prefix`.
std::vector<std::string> loaded_objects(const std::string& prefix) {
  struct Search {
    const std::string* prefix;
    std::vector<std::string> found;
  } search{&prefix, {}};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name && *info->dlpi_name &&
            fs::path(info->dlpi_name).filename().string().rfind(*s->prefix, 0) == 0)
          s->found.emplace_back(info->dlpi_name);
        return 0;
      },
      &search);
  return search.found;
}

}  // namespace

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
  // 2. A copy this process already loaded (PyTorch's, say): a second copy of a vendor library beside
  //    it doubles its state and memory, and one library's kernels would run beside another version's.
  if (!spec.file_prefix.empty())
    for (const auto& path : loaded_objects(spec.file_prefix))
      if (try_open(path, " (already loaded in this process)", spec, accept, out)) return out;
  // 3. The system loader (LD_LIBRARY_PATH, ldconfig).
  for (const auto& n : spec.sonames)
    if (try_open(n, " (system loader)", spec, accept, out)) return out;
  // 4. Python wheels.
  bool any_wheel = false;
  for (const auto& site : library_search::python_site_dirs())
    for (const auto& sub : spec.wheel_dirs) {
      const fs::path dir = site / sub;
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
  // 5. Fixed folders (the CUDA toolkit's).
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

void* dlsym_lookup(void* library, const char* name) { return dlsym(library, name); }

bool resolve_symbols(SymbolLookup lookup, void* context, std::initializer_list<Symbol> symbols, std::string& missing) {
  for (const Symbol& s : symbols) {
    *s.slot = lookup(context, s.name);
    if (!*s.slot) {
      missing = s.name;
      return false;
    }
  }
  return true;
}

LibraryReport load_vendor_library(const LibrarySpec& spec, const AcceptVersioned& accept) {
  LibraryReport r;
  const LoadedLibrary lib = load_library(spec, [&](void* handle) {
    size_t version = 0;
    std::string why = accept(handle, version);
    if (why.empty()) r.version = version;
    return why;
  });
  r.searched = lib.searched;
  if (!lib.handle) {
    r.error = not_found_message(spec, lib);
    DG_LOG(INFO) << r.error << ": using dnngraph's own engines";
    return r;
  }
  r.path = lib.path;
  r.ok = true;
  return r;
}

}  // namespace dnngraph::vendor
