#include <fstream>
#include <string>
#include <thread>

#include "dnngraph/handle.hpp"
#include "runtime/cpu/thread_pool.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/handle_impl.hpp"

namespace dnngraph {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index_);
}

ThreadPool& HandleImpl::thread_pool() {
  if (!pool) pool = std::make_shared<ThreadPool>(num_threads);
  return *pool;
}

DeviceInfo cpu_device_info() {
  DeviceInfo info;
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  info.name = "cpu: " + model;
  info.multiprocessors = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  info.signature = "cpu:" + model;
  // Nominal figures for the cost model: 2 FMA units x 8 fp32 lanes x 2 FLOP at ~3 GHz per core,
  // and ~10 GB/s of memory bandwidth per core. Heuristics only compare engines, so scale matters little.
  info.peak_flops = info.multiprocessors * 96e9;
  info.peak_bytes_per_s = info.multiprocessors * 10e9;
  return info;
}

namespace {
std::shared_ptr<HandleImpl> make_cpu() {
  auto impl = std::make_shared<HandleImpl>();
  impl->device = Device::cpu();
  impl->info = cpu_device_info();
  return impl;
}
}  // namespace

Handle::Handle() {
  if (cuda::device_count() > 0) {
    auto impl = std::make_shared<HandleImpl>();
    impl->device = Device::cuda(0);
    if (cuda::open_device(0, *impl).ok()) {
      impl_ = impl;
      return;
    }
  }
  impl_ = make_cpu();
}

Handle::Handle(Device device) {
  if (device.is_cpu()) {
    impl_ = make_cpu();
    return;
  }
  impl_ = std::make_shared<HandleImpl>();
  impl_->device = device;
  impl_->status = cuda::open_device(device.index(), *impl_);
}

Handle::~Handle() = default;
Handle::Handle(const Handle&) = default;
Handle& Handle::operator=(const Handle&) = default;

const Status& Handle::status() const { return impl_->status; }
Device Handle::device() const { return impl_->device; }
void* Handle::get_stream() const { return impl_->stream; }
Status Handle::set_stream(void* stream) {
  if (impl_->device.is_cpu() && stream != nullptr)
    return {ErrorCode::INVALID_VALUE, "set_stream: a CPU handle has no streams; pass nullptr"};
  impl_->stream = stream;
  return {};
}
Handle& Handle::set_num_threads(int n) {
  impl_->num_threads = n;
  impl_->pool.reset();
  return *this;
}
int Handle::get_num_threads() const {
  return impl_->num_threads > 0 ? impl_->num_threads : impl_->info.multiprocessors;
}

}  // namespace dnngraph
