#include "planning/described_target.hpp"

#include "runtime/cuda/context.hpp"

namespace dnngraph {

std::shared_ptr<HandleImpl> describe_handle(const DescribedGpu& gpu) {
  auto h = std::make_shared<HandleImpl>();
  h->device = Device::cuda(0);
  auto c = std::make_shared<cuda::Context>();
  c->sm_major = gpu.sm_major;
  c->sm_minor = gpu.sm_minor;
  c->multiprocessors = gpu.multiprocessors;
  c->max_threads_per_sm = gpu.max_threads_per_sm;
  c->total_memory = int64_t{141} << 30;
  h->info.name = gpu.name;
  h->info.sm_version = c->sm();
  h->info.signature = "cuda:sm_" + std::to_string(h->info.sm_version) + ":" + gpu.name;
  h->info.multiprocessors = gpu.multiprocessors;
  // Dense bf16 tensor-core FLOP per clock per SM on sm_90 (runtime/cuda/context.cpp's table).
  h->info.peak_flops = gpu.multiprocessors * gpu.clock_hz * 4096;
  h->info.peak_bytes_per_s = gpu.bytes_per_s;
  h->info.l2_bytes = gpu.l2_bytes;
  h->cuda = std::move(c);
  return h;
}

}  // namespace dnngraph
