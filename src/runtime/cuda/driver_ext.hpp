// Driver entry points the GEMM and convolution engines need beyond runtime/cuda's set: the
// dynamic shared-memory limit of a kernel, 3D grids, programmatic dependent launches, and TMA tensor maps (cuTensorMapEncodeTiled,
// host-only: it writes a 128-byte descriptor that the kernel takes as a __grid_constant__ parameter).
// Resolved with dlsym from the libcuda that runtime/cuda already loaded.
#pragma once
#include <cstdint>
#include <string_view>

#include "dnngraph/status.hpp"
#include "dnngraph/types.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cuda {

// CUtensorMap: 16 opaque 64-bit words, 64-byte aligned.
struct alignas(64) TensorMap {
  uint64_t words[16];
};

// A tile map of rank 2 to 5 over 16-bit or fp32 elements (dims and strides innermost first;
// strides in bytes, for dims 1.. only), 128-byte swizzle, out-of-bounds elements read as zero.
struct TensorMapSpec {
  DataType dtype = DataType::BFLOAT16;  // or HALF, FLOAT, FP8_E4M3, FP8_E5M2
  int rank = 3;
  uint64_t dims[5] = {1, 1, 1, 1, 1};
  uint64_t strides_bytes[4] = {0, 0, 0, 0};
  uint32_t box[5] = {1, 1, 1, 1, 1};
};
Status encode_tensor_map(const TensorMapSpec& spec, const void* base, TensorMap& out);

// An im2col map (cuTensorMapEncodeIm2col) over an NHWC (NDHWC) activation of rank 3..5: dims
// (C, W, [H, [D,]] N) and byte strides of dims 1.. innermost first; per spatial dim the bounding
// box's lower and upper corners and the traversal stride; each load brings `pixels` pixels of
// `channels` channels (one 128-byte row), 128-byte swizzle, out-of-bounds elements read as zero.
struct Im2colMapSpec {
  DataType dtype = DataType::BFLOAT16;  // or HALF, FLOAT
  int rank = 4;
  uint64_t dims[5] = {1, 1, 1, 1, 1};
  uint64_t strides_bytes[4] = {0, 0, 0, 0};
  int lower[3] = {0, 0, 0}, upper[3] = {0, 0, 0};
  uint32_t traversal[3] = {1, 1, 1};
  uint32_t channels = 64, pixels = 128;
};
Status encode_im2col_map(const Im2colMapSpec& spec, const void* base, TensorMap& out);

// Lets f use `bytes` of dynamic shared memory (above the 48 KB default).
Status set_dynamic_smem(CUfunction f, int bytes, std::string_view kernel_name);

struct Grid3 {
  unsigned x = 1, y = 1, z = 1;
};
// How many clusters of `cluster` CTAs (block threads, smem bytes of dynamic shared memory each) of
// f the device holds at once (cuOccupancyMaxActiveClusters: a driver query, for a plan to make once): an H100
// holds 66 pairs of 200+ KB CTAs but only 30 clusters of 4 and 15 of 8 (120 of its 132 SMs), so a
// persistent grid of SMs / cluster clusters would run its last ones as a second wave. 0 where the
// driver cannot say.
int max_active_clusters(CUfunction f, unsigned block, unsigned smem, unsigned cluster);

// How a launch orders against the kernel before it in the stream. PROGRAMMATIC (programmatic
// dependent launch, sm_90): the grid may be scheduled while the previous kernel drains, where that
// kernel asked for it (griddepcontrol.launch_dependents), so its launch and first instructions hide
// under the other's tail; it must then wait (griddepcontrol.wait) before it touches memory: only
// for kernels that call pdl_start (kernels/gemm_wgmma.cuh). Without cuLaunchKernelEx in the driver,
// or with DNNGRAPH_PROGRAMMATIC_LAUNCH=0, it launches in stream order.
enum class LaunchOrder { STREAM, PROGRAMMATIC };
Status launch_3d(HandleImpl& h, CUfunction f, Grid3 grid, unsigned block, unsigned smem, void** args,
                 std::string_view kernel_name, LaunchOrder order = LaunchOrder::STREAM);

}  // namespace dnngraph::cuda
