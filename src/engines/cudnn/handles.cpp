#include "engines/cudnn/handles.hpp"

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/log.hpp"
#include "planning/parallel_build.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cudnn {
namespace {

// Allocated once and never freed: handles and caches live as long as the process, and destroying
// them from a static destructor could run after the CUDA driver has shut down.
struct Registry {
  std::mutex mutex;
  std::map<cuda::CUcontext, std::vector<std::unique_ptr<SharedHandle>>> handles;  // per context, the first first
  std::map<std::pair<const KernelCacheImpl*, uint64_t>, std::unique_ptr<Descriptor>> caches;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR with CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH: cuDNN 9.5.
constexpr size_t kKernelCacheVersion = 90500;

// A new handle at the end of the pool; `r.mutex` held.
Status add_handle(const CudnnApi& api, const HandleImpl& h, std::vector<std::unique_ptr<SharedHandle>>& pool) {
  auto sh = std::make_unique<SharedHandle>();
  if (cudnnStatus_t s = api.cudnnCreate(&sh->handle); s != STATUS_SUCCESS)
    return cudnn_error(api, s, "cudnnCreate on cuda:" + std::to_string(h.cuda->ordinal),
                       ErrorCode::DEVICE_NOT_AVAILABLE);
  DG_LOG(INFO) << "cudnn: created cuDNN handle " << pool.size() << " for cuda:" << h.cuda->ordinal;
  pool.push_back(std::move(sh));
  return {};
}

}  // namespace

// The context's pool, its first handle made on first use; `r.mutex` held, the context current.
Status pool_of(const CudnnApi& api, const HandleImpl& h, Registry& r, std::vector<std::unique_ptr<SharedHandle>>*& out) {
  out = &r.handles[h.cuda->context];
  return out->empty() ? add_handle(api, h, *out) : Status{};
}

Status shared_handle(const CudnnApi& api, HandleImpl& h, SharedHandle*& out) {
  out = nullptr;
  if (!h.cuda) return {ErrorCode::DEVICE_NOT_AVAILABLE, "cudnn: not a CUDA handle"};
  if (auto s = cuda::make_current(h); !s.ok()) return s;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::unique_ptr<SharedHandle>>* pool = nullptr;
  if (auto s = pool_of(api, h, r, pool); !s.ok()) return s;
  out = pool->front().get();
  return {};
}

Status build_handle(const CudnnApi& api, HandleImpl& h, bool first_only, SharedHandle*& out,
                    std::unique_lock<std::mutex>& lock) {
  out = nullptr;
  if (!h.cuda) return {ErrorCode::DEVICE_NOT_AVAILABLE, "cudnn: not a CUDA handle"};
  if (auto s = cuda::make_current(h); !s.ok()) return s;
  SharedHandle* first = nullptr;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> registry_lock(r.mutex);
    std::vector<std::unique_ptr<SharedHandle>>* pool = nullptr;
    if (auto s = pool_of(api, h, r, pool); !s.ok()) return s;
    first = pool->front().get();
    // try_lock only while the registry is held: a handle busy with a build is never waited on here.
    for (size_t i = 0; !first_only && i < pool->size(); ++i) {
      std::unique_lock<std::mutex> l((*pool)[i]->mutex, std::try_to_lock);
      if (!l.owns_lock()) continue;
      out = (*pool)[i].get(), lock = std::move(l);
      return {};
    }
    if (!first_only && pool->size() < build_threads() && add_handle(api, h, *pool).ok()) {
      out = pool->back().get(), lock = std::unique_lock<std::mutex>(out->mutex);
      return {};
    }
  }
  out = first, lock = std::unique_lock<std::mutex>(first->mutex);
  return {};
}

size_t handle_count(const HandleImpl& h) {
  if (!h.cuda) return 0;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.handles.find(h.cuda->context);
  return it == r.handles.end() ? 0 : it->second.size();
}

Status kernel_cache(const CudnnApi& api, const KernelCacheImpl* owner, uint64_t topology, const Descriptor& graph,
                    BackendDescriptor& out) {
  out = nullptr;
  if (!owner || api.cudnnGetVersion() < kKernelCacheVersion) return {};
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.caches[{owner, topology}];
  if (!slot) {
    auto kc = std::make_unique<Descriptor>(api, Desc::KERNEL_CACHE);
    kc->set_desc(Attr::KERNEL_CACHE_OPERATION_GRAPH, graph.get());
    if (auto s = kc->finalize(); !s.ok()) {
      r.caches.erase({owner, topology});
      return s;
    }
    slot = std::move(kc);
  }
  out = slot->get();
  return {};
}

}  // namespace dnngraph::cudnn
