// What heuristics and caches need to know about a device.
#pragma once
#include <cstdint>
#include <string>

namespace dnngraph {

struct DeviceInfo {
  std::string name;             // "cpu: <model>" or "NVIDIA H200"
  std::string signature;        // keys tuning records and serialized plans, e.g. "cuda:sm_90:NVIDIA H200"
  int sm_version = 0;           // 90 for sm_90; 0 on the CPU
  int multiprocessors = 0;      // SMs, or cores on the CPU
  double peak_flops = 0;        // fp32 FMA rate (CPU) or dense bf16 tensor rate (GPU), FLOP/s
  double peak_bytes_per_s = 0;  // memory bandwidth, read + write
  int64_t l2_bytes = 0;
};

DeviceInfo cpu_device_info();

}  // namespace dnngraph
