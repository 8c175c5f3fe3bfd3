#include "runtime/library_search.hpp"

#include <algorithm>
#include <cstdlib>

namespace dnngraph::library_search {
namespace {

namespace fs = std::filesystem;

// Subfolders of `parent` whose name starts with "python3" (python3.11, python3.12, ...), newest first.
std::vector<fs::path> python_dirs(const fs::path& parent) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) return out;
  for (const auto& e : fs::directory_iterator(parent, ec))
    if (e.path().filename().string().rfind("python3", 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

// <prefix>/lib of the python3 first on PATH (a venv's or conda's, say), when there is one.
void add_python_on_path(std::vector<fs::path>& roots) {
  const std::string path = env("PATH");
  for (size_t pos = 0; pos <= path.size();) {
    size_t end = path.find(':', pos);
    if (end == std::string::npos) end = path.size();
    const fs::path exe = fs::path(path.substr(pos, end - pos)) / "python3";
    std::error_code ec;
    if (!exe.parent_path().empty() && fs::exists(exe, ec)) {
      roots.push_back(exe.parent_path().parent_path() / "lib");
      return;
    }
    pos = end + 1;
  }
}

}  // namespace

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

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

std::vector<fs::path> python_site_dirs() {
  std::vector<fs::path> roots;  // folders holding python3.X/
  std::vector<fs::path> sites;
  if (auto s = env("DNNGRAPH_PYTHON_SITE"); !s.empty()) sites.emplace_back(s);
  if (auto v = env("VIRTUAL_ENV"); !v.empty()) roots.emplace_back(fs::path(v) / "lib");
  add_python_on_path(roots);
  if (auto h = env("HOME"); !h.empty()) roots.emplace_back(fs::path(h) / ".local/lib");
  roots.emplace_back("/usr/local/lib");
  roots.emplace_back("/usr/lib");
  for (const auto& r : roots)
    for (const auto& py : python_dirs(r)) {
      sites.push_back(py / "site-packages");
      sites.push_back(py / "dist-packages");
    }
  return sites;
}

}  // namespace dnngraph::library_search
