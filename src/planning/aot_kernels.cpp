#include "planning/aot_kernels.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace dnngraph {

namespace {

// Built once: a registry of constants (empty with DNNGRAPH_AOT_KERNELS=0).
const std::unordered_map<std::string_view, const AotKernel*>& aot_table() {
  static const auto* table = [] {
    auto* m = new std::unordered_map<std::string_view, const AotKernel*>();
    const char* off = std::getenv("DNNGRAPH_AOT_KERNELS");
    if (off && std::strcmp(off, "0") == 0) return m;
    for (size_t i = 0; i < kAotKernelCount; ++i) m->emplace(kAotKernels[i].key, &kAotKernels[i]);
    return m;
  }();
  return *table;
}

}  // namespace

bool aot_kernels_available() { return !aot_table().empty(); }

const AotKernel* aot_find(const KernelKey& key) {
  const auto& table = aot_table();
  if (table.empty()) return nullptr;
  const auto it = table.find(key.portable_text());
  return it == table.end() ? nullptr : it->second;
}

}  // namespace dnngraph
