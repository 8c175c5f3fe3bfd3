// dnngraph info: the library version, the devices present, the CUDA runtime libraries found (or why
// not), and the engine registry.
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/vendor_libraries.hpp"
#include "planning/cache_files.hpp"
#include "planning/engine.hpp"
#include "planning/tuning_db.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/device_info.hpp"
#include "planning/introspect.hpp"

namespace dnngraph::cli {
namespace {

void print_indented(const std::string& text, const char* indent) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) std::cout << indent << line << "\n";
}

void print_devices() {
  const DeviceInfo cpu = cpu_device_info();
  std::cout << "devices:\n";
  std::cout << "  cpu: " << cpu.name.substr(cpu.name.rfind("cpu: ", 0) == 0 ? 5 : 0) << ", " << cpu.multiprocessors
            << " hardware threads\n";
  const int n = cuda::device_count();
  for (int i = 0; i < n; ++i) {
    Handle h(Device::cuda(i));
    if (!h.status().ok()) {
      std::cout << "  cuda:" << i << ": unusable: " << h.status().message() << "\n";
      continue;
    }
    const DeviceInfo& d = introspect::device_info(h);
    std::cout << "  cuda:" << i << ": " << d.name << ", sm_" << d.sm_version << ", " << d.multiprocessors << " SMs\n";
  }
  if (n == 0) {
    Handle h(Device::cuda(0));
    std::cout << "  cuda: none (" << (h.status().ok() ? "no device reported" : h.status().message()) << ")\n";
  }
}

void print_caches() {
  const std::string dir = files::default_cache_dir();
  std::cout << "caches:\n  cache folder: " << (dir.empty() ? "none (set DNNGRAPH_CACHE_DIR or HOME)" : dir)
            << " ($DNNGRAPH_CACHE_DIR, else ~/.cache/dnngraph)\n";
  const std::string db = TuningDb::default_path();
  std::cout << "  tuning DB: " << (db.empty() ? "none" : db) << " ($DNNGRAPH_TUNING_DB, else <cache folder>/tuning.db)";
  if (!db.empty()) {
    std::vector<TuningRecord> records;
    std::vector<std::string> warnings;
    auto s = TuningDb(db).load(records, warnings);
    if (s.ok()) std::cout << ": " << records.size() << " records of this version";
    else std::cout << ": unreadable: " << s.message();
    if (!warnings.empty()) std::cout << ", " << warnings.size() << " lines skipped";
  }
  std::cout << "\n  kernel cache: in memory per KernelCache object; on disk where KernelCache::set_directory names a folder\n";
}

void print_info() {
  std::cout << "dnngraph " << kVersionString << "\n";
  print_devices();
  std::cout << "CUDA runtime libraries:\n";
  print_indented(cuda::describe_runtime(), "  ");
  print_indented(describe_vendor_libraries(), "  ");
  std::cout << "engines (id: name):\n";
  for (const auto& e : engine_registry()) std::cout << "  " << e.id << ": " << e.engine->name() << "\n";
  print_caches();
  Handle best;
  std::cout << "default device: " << best.device().to_string() << "\n";
}

// The same facts as one JSON object (schema: docs/cli.md).
void print_info_json() {
  nlohmann::json j;
  j["version"] = kVersionString;
  const DeviceInfo cpu = cpu_device_info();
  j["devices"].push_back({{"device", "cpu"}, {"name", cpu.name}, {"threads", cpu.multiprocessors}});
  for (int i = 0, n = cuda::device_count(); i < n; ++i) {
    Handle h(Device::cuda(i));
    nlohmann::json d = {{"device", "cuda:" + std::to_string(i)}, {"usable", h.status().ok()}};
    if (h.status().ok()) {
      const DeviceInfo& info = introspect::device_info(h);
      d.update({{"name", info.name}, {"sm", info.sm_version}, {"multiprocessors", info.multiprocessors}});
    } else {
      d["why_not"] = h.status().message();
    }
    j["devices"].push_back(d);
  }
  j["cuda_runtime"] = cuda::describe_runtime();
  j["vendor_libraries"] = describe_vendor_libraries();
  for (const auto& e : engine_registry()) j["engines"].push_back({{"id", e.id}, {"name", std::string(e.engine->name())}});
  j["cache_folder"] = files::default_cache_dir();
  j["tuning_db"] = TuningDb::default_path();
  Handle best;
  j["default_device"] = best.device().to_string();
  std::cout << j.dump(2) << "\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Version, devices, CUDA libraries found (or why not), engines");
  static bool json = false;
  cmd->add_flag("--json", json, "print one JSON object instead (schema: docs/cli.md)");
  cmd->callback([] { json ? print_info_json() : print_info(); });
}

}  // namespace dnngraph::cli
