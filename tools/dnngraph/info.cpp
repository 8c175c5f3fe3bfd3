// dnngraph info: the library version, the devices present, the CUDA runtime libraries found (or why
// not), and the engine registry.
#include <iostream>
#include <sstream>

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

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Version, devices, CUDA libraries found (or why not), engines");
  cmd->callback([] { print_info(); });
}

}  // namespace dnngraph::cli
