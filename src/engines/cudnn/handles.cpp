#include "engines/cudnn/handles.hpp"

#include <map>
#include <memory>
#include <utility>

#include "core/log.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cudnn {
namespace {

// Allocated once and never freed: handles and caches live as long as the process, and destroying
// them from a static destructor could run after the CUDA driver has shut down.
struct Registry {
  std::mutex mutex;
  std::map<cuda::CUcontext, std::unique_ptr<SharedHandle>> handles;
  std::map<std::pair<const KernelCacheImpl*, uint64_t>, std::unique_ptr<Descriptor>> caches;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// CUDNN_BACKEND_KERNEL_CACHE_DESCRIPTOR with CUDNN_ATTR_KERNEL_CACHE_OPERATION_GRAPH: cuDNN 9.5.
constexpr size_t kKernelCacheVersion = 90500;

}  // namespace

Status shared_handle(const CudnnApi& api, HandleImpl& h, SharedHandle*& out) {
  out = nullptr;
  if (!h.cuda) return {ErrorCode::DEVICE_NOT_AVAILABLE, "cudnn: not a CUDA handle"};
  if (auto s = cuda::make_current(h); !s.ok()) return s;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.handles[h.cuda->context];
  if (!slot) {
    auto sh = std::make_unique<SharedHandle>();
    if (cudnnStatus_t s = api.cudnnCreate(&sh->handle); s != STATUS_SUCCESS) {
      r.handles.erase(h.cuda->context);
      return cudnn_error(api, s, "cudnnCreate on cuda:" + std::to_string(h.cuda->ordinal),
                         ErrorCode::DEVICE_NOT_AVAILABLE);
    }
    DG_LOG(INFO) << "cudnn: created a cuDNN handle for cuda:" << h.cuda->ordinal;
    slot = std::move(sh);
  }
  out = slot.get();
  return {};
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
