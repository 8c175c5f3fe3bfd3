// The CUDA side of a handle. Implemented over the driver API loaded with dlopen (no CUDA library is
// linked; src/runtime/cuda/driver_api.hpp declares what is used).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dnngraph/status.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph::cuda {

// One device's primary context (shared with the CUDA runtime, PyTorch, ...), held while a handle lives.
struct Context {
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  int max_threads_per_sm = 0;
  int64_t total_memory = 0;
  ~Context();
  int sm() const { return sm_major * 10 + sm_minor; }
};

// Number of usable CUDA devices; 0 when the driver is missing or reports none.
int device_count();
// Opens device `index` for the handle: loads the driver, makes the context current, fills
// handle.info and handle.cuda. On failure returns why (what was searched, CUDA's own error string).
Status open_device(int index, HandleImpl& handle);
// For `dnngraph info`: what was searched for libcuda and NVRTC, and what was found.
std::string describe_runtime();

// A CUresult as a Status: CUDA_API_FAILED, "<what>: CUDA_ERROR_X (CUDA's own message)".
Status check(CUresult r, std::string_view what);
// Makes the handle's context current on the calling thread (cheap; every entry point calls it).
Status make_current(HandleImpl& h);
inline CUstream stream_of(const HandleImpl& h) { return static_cast<CUstream>(h.stream); }

}  // namespace dnngraph::cuda

// Device memory and copies on the handle's stream (used by runtime/memory.cpp).
namespace dnngraph::cuda {
Status allocate(HandleImpl& h, size_t bytes, void** ptr);
void release(HandleImpl& h, void* ptr);
enum class CopyDirection { TO_HOST, TO_DEVICE };
// Copies on the handle's stream, then waits for it.
Status copy(HandleImpl& h, CopyDirection direction, void* dst, const void* src, size_t bytes);
Status synchronize(HandleImpl& h);
bool is_device_pointer(HandleImpl& h, const void* ptr);
// Sets `count` 32-bit words to `value` on the handle's stream (asynchronous).
Status fill32(HandleImpl& h, void* dst, uint32_t value, size_t count);
}  // namespace dnngraph::cuda

// Streams, events, modules and launches.
namespace dnngraph::cuda {

// A stream owned by the caller of create_stream (tests, benchmarks, the CLI).
Status create_stream(HandleImpl& h, void** stream);
void destroy_stream(HandleImpl& h, void* stream);

// Times work on the handle's stream with two CUDA events: start(), enqueue work, stop(),
// seconds() waits for the stop event. For autotune and benchmarks.
class EventTimer {
 public:
  static Status create(HandleImpl& h, std::unique_ptr<EventTimer>& out);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  Status start();
  Status stop();
  Status seconds(double& out);

 private:
  explicit EventTimer(HandleImpl& h) : h_(h) {}
  HandleImpl& h_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

// A loaded cubin and the kernels looked up in it; unloaded when the last owner goes.
class Module {
 public:
  static Status load(HandleImpl& h, const std::vector<uint8_t>& image, std::shared_ptr<Module>& out);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Status function(const char* name, CUfunction& out) const;

 private:
  Module() = default;
  std::shared_ptr<Context> ctx_;
  CUmodule module_ = nullptr;
};

struct LaunchDims {
  unsigned grid = 1;
  unsigned block = 1;
  unsigned shared_bytes = 0;
};
// Launches on the handle's stream. `args` points to each kernel parameter.
Status launch(HandleImpl& h, CUfunction f, const LaunchDims& d, void** args, std::string_view kernel_name);

}  // namespace dnngraph::cuda
