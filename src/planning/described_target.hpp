// A CUDA target described by numbers rather than opened: what the H200 reports (sm_90, 132 SMs,
// 2048 threads per SM), with no context. The engines' checks, knob spaces, estimates and code
// generation read only these numbers, so planning and NVRTC compiles for an H200 run on a machine
// without a GPU: the AOT kernel generator (tools/aot) and its test use it. Loading a module on it
// fails (there is no context), after the kernel was compiled and cached.
#pragma once
#include <memory>

#include "planning/engine.hpp"

namespace dnngraph {

struct DescribedGpu {
  int sm_major = 9, sm_minor = 0;
  int multiprocessors = 132;
  int max_threads_per_sm = 2048;
  double clock_hz = 1.98e9;        // boost clock: peak_flops as runtime/cuda/context.cpp derives it
  double bytes_per_s = 4.8e12;     // HBM3e
  int64_t l2_bytes = 50 << 20;
  const char* name = "NVIDIA H200";
};

// A handle that stands for `gpu`: device cuda:0, info as open_device would fill it, a context
// object holding the numbers and no CUDA context.
std::shared_ptr<HandleImpl> describe_handle(const DescribedGpu& gpu = {});

}  // namespace dnngraph
