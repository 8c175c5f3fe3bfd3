// SCAFFOLDING: delete when autotune, serialization and the kernel cache land.
#include "dnngraph/graph.hpp"
#include "graph/graph_impl.hpp"

namespace dnngraph {
static Status pending() { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status Graph::autotune(const Handle&, const VariantPack&, void*) { return pending(); }
Status Graph::autotune(const Handle&, const UidVariantPack&, void*) { return pending(); }
Status Graph::serialize(std::vector<uint8_t>&) const { return pending(); }
Status Graph::deserialize(const Handle&, const std::vector<uint8_t>&) { return pending(); }

struct KernelCacheImpl {
  std::string dir;
};
KernelCache::KernelCache() : impl_(std::make_unique<KernelCacheImpl>()) {}
KernelCache::~KernelCache() = default;
KernelCache& KernelCache::set_directory(std::string d) { impl_->dir = std::move(d); return *this; }
const std::string& KernelCache::get_directory() const { return impl_->dir; }
int64_t KernelCache::size() const { return 0; }
int64_t KernelCache::hits() const { return 0; }
int64_t KernelCache::misses() const { return 0; }
}  // namespace dnngraph
