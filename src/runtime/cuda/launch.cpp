// Streams, events, modules and kernel launches over the dlopen'ed driver.
#include <map>
#include <mutex>
#include <tuple>

#include "core/hash.hpp"
#include "core/log.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cuda {

Status create_stream(HandleImpl& h, void** stream) {
  *stream = nullptr;
  if (auto s = make_current(h); !s.ok()) return s;
  CUstream st = nullptr;
  if (auto s = check(driver()->cuStreamCreate(&st, STREAM_NON_BLOCKING), "cuStreamCreate"); !s.ok()) return s;
  *stream = st;
  return {};
}

void destroy_stream(HandleImpl& h, void* stream) {
  if (!stream || !make_current(h).ok()) return;
  if (auto s = check(driver()->cuStreamDestroy(static_cast<CUstream>(stream)), "cuStreamDestroy"); !s.ok()) {
    DG_LOG(ERROR) << s.to_string();
  }
}

// ---- events

Status EventTimer::create(HandleImpl& h, std::unique_ptr<EventTimer>& out) {
  if (auto s = make_current(h); !s.ok()) return s;
  std::unique_ptr<EventTimer> t(new EventTimer(h));
  const DriverApi& d = *driver();
  if (auto s = check(d.cuEventCreate(&t->start_, EVENT_DEFAULT), "cuEventCreate"); !s.ok()) return s;
  if (auto s = check(d.cuEventCreate(&t->stop_, EVENT_DEFAULT), "cuEventCreate"); !s.ok()) return s;
  out = std::move(t);
  return {};
}

EventTimer::~EventTimer() {
  const DriverApi* d = driver();
  if (!d || !make_current(h_).ok()) return;
  if (start_) d->cuEventDestroy(start_);
  if (stop_) d->cuEventDestroy(stop_);
}

Status EventTimer::start() {
  if (auto s = make_current(h_); !s.ok()) return s;
  return check(driver()->cuEventRecord(start_, stream_of(h_)), "cuEventRecord");
}

Status EventTimer::stop() {
  if (auto s = make_current(h_); !s.ok()) return s;
  return check(driver()->cuEventRecord(stop_, stream_of(h_)), "cuEventRecord");
}

Status EventTimer::seconds(double& out) {
  if (auto s = make_current(h_); !s.ok()) return s;
  const DriverApi& d = *driver();
  if (auto s = check(d.cuEventSynchronize(stop_), "cuEventSynchronize"); !s.ok()) return s;
  float ms = 0;
  if (auto s = check(d.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime"); !s.ok()) return s;
  out = ms * 1e-3;
  return {};
}

// ---- modules

namespace {
// Loaded modules by (context, image hash, image size): the partitions of one graph often compile
// to the same cubin (10k identical ReLUs: one kernel), and a module loaded once per plan cost the
// driver's host and device memory per plan (~60 KB each on an H200). A module is immutable once
// loaded, so plans share it; the last one to let go unloads it.
struct LoadedModules {
  std::mutex mutex;
  std::map<std::tuple<CUcontext, uint64_t, size_t>, std::weak_ptr<Module>> by_image;
  size_t inserts = 0;
};
LoadedModules& loaded_modules() {
  static LoadedModules* m = new LoadedModules();  // never destroyed: modules may outlive static teardown
  return *m;
}
}  // namespace

Status Module::load(HandleImpl& h, const std::vector<uint8_t>& image, std::shared_ptr<Module>& out) {
  if (auto s = make_current(h); !s.ok()) return s;
  LoadedModules& cache = loaded_modules();
  const auto key = std::make_tuple(h.cuda->context, hash64(image.data(), image.size()), image.size());
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (auto it = cache.by_image.find(key); it != cache.by_image.end())
    if (auto shared = it->second.lock()) {
      out = std::move(shared);
      return {};
    }
  std::shared_ptr<Module> m(new Module());
  m->ctx_ = h.cuda;
  if (auto s = check(driver()->cuModuleLoadData(&m->module_, image.data()), "cuModuleLoadData"); !s.ok()) return s;
  cache.by_image[key] = m;
  if (++cache.inserts % 1024 == 0) std::erase_if(cache.by_image, [](const auto& e) { return e.second.expired(); });
  out = std::move(m);
  return {};
}

Module::~Module() {
  const DriverApi* d = driver();
  if (!d || !module_ || !ctx_) return;
  if (d->cuCtxSetCurrent(ctx_->context) == CUDA_SUCCESS) d->cuModuleUnload(module_);
}

Status Module::function(const char* name, CUfunction& out) const {
  return check(driver()->cuModuleGetFunction(&out, module_, name), std::string("cuModuleGetFunction(") + name + ")");
}

Status launch(HandleImpl& h, CUfunction f, const LaunchDims& dims, void** args, std::string_view kernel_name) {
  if (auto s = make_current(h); !s.ok()) return s;
  const CUresult r =
      driver()->cuLaunchKernel(f, dims.grid, 1, 1, dims.block, 1, 1, dims.shared_bytes, stream_of(h), args, nullptr);
  if (r == CUDA_SUCCESS) return {};  // the message is built only for a failure: this runs per launch
  return check(r, "cuLaunchKernel(" + std::string(kernel_name) + ")");
}

}  // namespace dnngraph::cuda
