// KernelCache: compiled kernels shared by graphs, in memory and (optionally) on disk.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "dnngraph/export.hpp"

// Not exported: outside the API region (dnngraph/export.hpp).
namespace dnngraph {
struct KernelCacheImpl;
}

DNNGRAPH_API_BEGIN
namespace dnngraph {

class KernelCache {
 public:
  KernelCache();
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // Also keep binaries in this folder (created if missing); empty disables the disk cache.
  KernelCache& set_directory(std::string dir);
  const std::string& get_directory() const;
  int64_t size() const;    // entries in memory
  int64_t hits() const;    // lookups served without compiling
  int64_t misses() const;  // lookups that compiled

  // The library's own layers reach the internals through this (src/planning/kernel_cache.hpp).
  friend KernelCacheImpl& impl_of(const KernelCache& c);

 private:
  std::unique_ptr<KernelCacheImpl> impl_;
};

}  // namespace dnngraph
DNNGRAPH_API_END
