// Device and Handle: where a graph runs, and the stream it runs on.
#pragma once
#include <memory>
#include <string>

#include "dnngraph/status.hpp"

#include "dnngraph/export.hpp"

// Not exported: outside the API region (dnngraph/export.hpp).
namespace dnngraph {
struct HandleImpl;
}

DNNGRAPH_API_BEGIN
namespace dnngraph {

enum class DeviceKind : int { CPU = 0, CUDA };

class Device {
 public:
  static Device cpu() { return Device(DeviceKind::CPU, 0); }
  static Device cuda(int index = 0) { return Device(DeviceKind::CUDA, index); }
  DeviceKind kind() const { return kind_; }
  int index() const { return index_; }
  bool is_cpu() const { return kind_ == DeviceKind::CPU; }
  bool is_cuda() const { return kind_ == DeviceKind::CUDA; }
  std::string to_string() const;  // "cpu", "cuda:0"
  bool operator==(const Device&) const = default;

 private:
  Device(DeviceKind k, int i) : kind_(k), index_(i) {}
  DeviceKind kind_;
  int index_;
};

// A Handle is cheap to copy (copies share state). Handle() picks CUDA device 0 when usable, else the
// CPU. Handle(Device::cuda(i)) on a machine that cannot give that device is a handle whose status()
// says why; every graph call made with it returns that status.
class Handle {
 public:
  Handle();
  explicit Handle(Device device);
  ~Handle();
  Handle(const Handle&);
  Handle& operator=(const Handle&);

  const Status& status() const;
  Device device() const;
  // A cudaStream_t on CUDA handles (nullptr = the default stream); ignored on the CPU.
  Status set_stream(void* stream);
  void* get_stream() const;
  // Worker threads for CPU engines; 0 = every core.
  Handle& set_num_threads(int n);
  int get_num_threads() const;

  // The library's own layers reach the internals through this (src/runtime/handle_impl.hpp).
  friend HandleImpl& impl_of(const Handle& h);

 private:
  std::shared_ptr<HandleImpl> impl_;
};

}  // namespace dnngraph
DNNGRAPH_API_END
