// Devices, contexts and device memory over the dlopen'ed driver.
#include "runtime/cuda/context.hpp"

#include <sstream>

#include "core/log.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph::cuda {
namespace {

Status no_driver() {
  return {ErrorCode::DEVICE_NOT_AVAILABLE, "no CUDA device can be used: " + driver_error()};
}

std::string error_text(const DriverApi& d, CUresult r) {
  const char* name = nullptr;
  const char* msg = nullptr;
  if (d.cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (d.cuGetErrorString(r, &msg) != CUDA_SUCCESS) msg = nullptr;
  return std::string(name ? name : "CUDA error " + std::to_string(r)) + " (" + (msg ? msg : "unknown error") + ")";
}

int attribute(const DriverApi& d, int attr, CUdevice dev) {
  int v = 0;
  if (d.cuDeviceGetAttribute(&v, attr, dev) != CUDA_SUCCESS) return 0;
  return v;
}

// Dense bf16 tensor-core FLOP per clock per multiprocessor, by architecture (datasheet leads; the
// cost model only compares engines, and autotune measures).
double tensor_flop_per_clock(int sm) {
  if (sm >= 100 && sm < 110) return 8192;
  if (sm >= 90 && sm < 100) return 4096;
  if (sm == 80) return 2048;
  if (sm >= 70) return 1024;
  return 256;
}

DeviceInfo query_info(const DriverApi& d, const Context& c) {
  DeviceInfo info;
  char name[256] = {};
  if (d.cuDeviceGetName(name, sizeof(name) - 1, c.device) != CUDA_SUCCESS) name[0] = 0;
  info.name = name[0] ? name : "CUDA device";
  info.sm_version = c.sm();
  info.signature = "cuda:sm_" + std::to_string(info.sm_version) + ":" + info.name;
  info.multiprocessors = c.multiprocessors;
  const double clock_hz = attribute(d, ATTR_CLOCK_RATE, c.device) * 1e3;
  info.peak_flops = c.multiprocessors * clock_hz * tensor_flop_per_clock(info.sm_version);
  // Double data rate: two transfers per memory clock over the whole bus.
  const double mem_hz = attribute(d, ATTR_MEMORY_CLOCK_RATE, c.device) * 1e3;
  const double bus_bytes = attribute(d, ATTR_GLOBAL_MEMORY_BUS_WIDTH, c.device) / 8.0;
  info.peak_bytes_per_s = 2.0 * mem_hz * bus_bytes;
  info.l2_bytes = attribute(d, ATTR_L2_CACHE_SIZE, c.device);
  if (info.peak_flops <= 0) info.peak_flops = 1e14;  // attribute missing: a nominal figure
  if (info.peak_bytes_per_s <= 0) info.peak_bytes_per_s = 1e12;
  return info;
}

}  // namespace

Status check(CUresult r, std::string_view what) {
  if (r == CUDA_SUCCESS) return {};
  const DriverApi* d = driver();
  return {ErrorCode::CUDA_API_FAILED,
          std::string(what) + ": " + (d ? error_text(*d, r) : "CUDA error " + std::to_string(r))};
}

Context::~Context() {
  if (const DriverApi* d = driver(); d && context) d->cuDevicePrimaryCtxRelease(device);
}

int device_count() {
  const DriverApi* d = driver();
  if (!d) return 0;
  int n = 0;
  if (d->cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

Status open_device(int index, HandleImpl& h) {
  const DriverApi* d = driver();
  const std::string who = "cuda:" + std::to_string(index);
  if (!d) return {ErrorCode::DEVICE_NOT_AVAILABLE, who + " requested, but " + driver_error()};
  int n = 0;
  if (CUresult r = d->cuDeviceGetCount(&n); r != CUDA_SUCCESS) return check(r, who + ": cuDeviceGetCount");
  if (index < 0 || index >= n)
    return {ErrorCode::DEVICE_NOT_AVAILABLE,
            who + " requested, but the driver reports " + std::to_string(n) + " CUDA device(s)"};
  auto c = std::make_shared<Context>();
  c->ordinal = index;
  if (auto s = check(d->cuDeviceGet(&c->device, index), who + ": cuDeviceGet"); !s.ok()) return s;
  CUcontext ctx = nullptr;
  if (auto s = check(d->cuDevicePrimaryCtxRetain(&ctx, c->device), who + ": cuDevicePrimaryCtxRetain"); !s.ok())
    return s;
  c->context = ctx;
  if (auto s = check(d->cuCtxSetCurrent(ctx), who + ": cuCtxSetCurrent"); !s.ok()) return s;
  c->sm_major = attribute(*d, ATTR_COMPUTE_CAPABILITY_MAJOR, c->device);
  c->sm_minor = attribute(*d, ATTR_COMPUTE_CAPABILITY_MINOR, c->device);
  c->multiprocessors = attribute(*d, ATTR_MULTIPROCESSOR_COUNT, c->device);
  c->max_threads_per_sm = attribute(*d, ATTR_MAX_THREADS_PER_MULTIPROCESSOR, c->device);
  size_t total = 0;
  if (d->cuDeviceTotalMem(&total, c->device) == CUDA_SUCCESS) c->total_memory = static_cast<int64_t>(total);
  if (c->sm() < 70)
    return {ErrorCode::DEVICE_NOT_AVAILABLE,
            who + " is sm_" + std::to_string(c->sm()) + "; dnngraph's CUDA engines need sm_70 or newer"};
  h.info = query_info(*d, *c);
  h.cuda = std::move(c);
  DG_LOG(INFO) << "cuda: opened " << who << ": " << h.info.signature;
  return {};
}

Status make_current(HandleImpl& h) {
  const DriverApi* d = driver();
  if (!d || !h.cuda) return no_driver();
  // Reading the thread's context is cheaper than setting it, and on every launch it is usually ours.
  CUcontext current = nullptr;
  if (d->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == h.cuda->context) return {};
  return check(d->cuCtxSetCurrent(h.cuda->context), "cuCtxSetCurrent");
}

std::string describe_runtime() {
  std::ostringstream os;
  os << "CUDA driver:\n";
  for (const auto& line : driver_search_log()) os << "  searched " << line << "\n";
  if (const DriverApi* d = driver()) {
    const int v = driver_version();
    os << "  driver API " << v / 1000 << "." << (v % 1000) / 10 << ", " << device_count() << " device(s)\n";
    for (int i = 0; i < device_count(); ++i) {
      CUdevice dev = 0;
      char name[256] = {};
      if (d->cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
      if (d->cuDeviceGetName(name, sizeof(name) - 1, dev) != CUDA_SUCCESS) name[0] = 0;
      size_t mem = 0;
      if (d->cuDeviceTotalMem(&mem, dev) != CUDA_SUCCESS) mem = 0;
      os << "  cuda:" << i << ": " << name << ", sm_" << attribute(*d, ATTR_COMPUTE_CAPABILITY_MAJOR, dev)
         << attribute(*d, ATTR_COMPUTE_CAPABILITY_MINOR, dev) << ", "
         << attribute(*d, ATTR_MULTIPROCESSOR_COUNT, dev) << " SMs, " << (mem >> 20) << " MiB\n";
    }
  } else {
    os << "  not usable: " << driver_error() << "\n  (the CPU engines serve)\n";
  }
  os << "NVRTC:\n";
  const NvrtcApi* nv = nvrtc();
  for (const auto& line : nvrtc_search_log()) os << "  searched " << line << "\n";
  if (nv) os << "  using " << nvrtc_path() << " (" << nvrtc_version() / 10 << "." << nvrtc_version() % 10 << ")\n";
  else os << "  not usable: NVRTC was not found; CUDA engines that compile kernels are unavailable\n";
  return os.str();
}

// ---- memory

Status allocate(HandleImpl& h, size_t bytes, void** ptr) {
  *ptr = nullptr;
  if (auto s = make_current(h); !s.ok()) return s;
  CUdeviceptr p = 0;
  if (auto s = check(driver()->cuMemAlloc(&p, bytes == 0 ? 1 : bytes),
                     "cuMemAlloc of " + std::to_string(bytes) + " bytes");
      !s.ok())
    return s;
  *ptr = reinterpret_cast<void*>(p);
  return {};
}

void release(HandleImpl& h, void* ptr) {
  if (!ptr || !make_current(h).ok()) return;
  if (auto s = check(driver()->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree"); !s.ok()) {
    DG_LOG(ERROR) << s.to_string();
  }
}

Status copy(HandleImpl& h, CopyDirection direction, void* dst, const void* src, size_t bytes) {
  if (auto s = make_current(h); !s.ok()) return s;
  const DriverApi& d = *driver();
  const bool to_host = direction == CopyDirection::TO_HOST;
  const CUresult r = to_host ? d.cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, stream_of(h))
                             : d.cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream_of(h));
  if (auto s = check(r, to_host ? "cuMemcpyDtoHAsync" : "cuMemcpyHtoDAsync"); !s.ok()) return s;
  return check(d.cuStreamSynchronize(stream_of(h)),
               to_host ? "cuStreamSynchronize after a copy to the host" : "cuStreamSynchronize after a copy to the device");
}

Status synchronize(HandleImpl& h) {
  if (auto s = make_current(h); !s.ok()) return s;
  return check(driver()->cuStreamSynchronize(stream_of(h)), "cuStreamSynchronize");
}

Status fill32(HandleImpl& h, void* dst, uint32_t value, size_t count) {
  if (auto s = make_current(h); !s.ok()) return s;
  return check(driver()->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count, stream_of(h)),
               "cuMemsetD32Async");
}

bool is_device_pointer(HandleImpl& h, const void* ptr) {
  if (!ptr || !make_current(h).ok()) return false;
  const DriverApi& d = *driver();
  unsigned type = 0;
  if (d.cuPointerGetAttribute(&type, POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(ptr)) !=
      CUDA_SUCCESS)
    return false;  // memory the driver does not know: pageable host memory
  if (type == MEMORYTYPE_HOST || type == MEMORYTYPE_UNIFIED) return true;  // pinned (mapped) or managed
  int ordinal = -1;
  if (d.cuPointerGetAttribute(&ordinal, POINTER_ATTRIBUTE_DEVICE_ORDINAL, reinterpret_cast<CUdeviceptr>(ptr)) !=
      CUDA_SUCCESS)
    return false;
  return ordinal == h.cuda->ordinal;
}

}  // namespace dnngraph::cuda
