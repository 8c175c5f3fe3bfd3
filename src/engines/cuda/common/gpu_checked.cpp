#include "engines/cuda/common/gpu_checked.hpp"

#include <array>
#include <cstdlib>

namespace dnngraph::cuda {
namespace {

// The names whose kernels still wait for a GPU run against ref (tests/engines/test_cuda_*.cpp):
// cuda_gemm_wgmma_tma's FP8 matmuls (`gemm_fp8`, CudaGemmFp8.*; written 2026-12-08 without a GPU).
// Released: cuda_gemm_wgmma_tma's stream-K tail (`gemm_stream_k`) left on 2026-12-08 after
// CudaGemmStreamK.* passed on an H100; its 3xTF32 matmuls (`gemm_tf32x3`) left on 2026-12-07 after CudaGemmTf32x3.* passed on an H100. cuda_pool_direct's channels-vector 2-D pooling (`pool_channels`) and resizing
// (`pool_channels_resize`) left on 2026-12-07 after their tests (CudaPool.*) passed on an H100; the conv engine's halo tiles, split clusters and
// cuda_pool_direct on 2026-12-06, as the conv engine's clusters of 8 along N, cuda_sdpa_flash's
// three-stage K/V ring and the split clusters had that day, the register epilogue's boxed form on
// 2026-12-05, and the fused genstats, cuda_norm_rowwise and cuda_layout_copy before.
constexpr std::array<std::string_view, 1> kHeldBack{"gemm_fp8"};

// Whether the comma-separated list `env` names `name` (spaces around names are ignored).
bool listed(std::string_view env, std::string_view name) {
  while (!env.empty()) {
    const size_t comma = env.find(',');
    std::string_view item = env.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == name) return true;
    if (comma == std::string_view::npos) break;
    env.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::span<const std::string_view> held_back_list() { return kHeldBack; }

bool held_back(std::string_view name, std::span<const std::string_view> list) {
  bool on_list = false;
  for (std::string_view h : list) on_list = on_list || h == name;
  if (!on_list) return false;
  const char* env = std::getenv("DNNGRAPH_UNCHECKED_ENGINES");
  return !(env && listed(env, name));
}

bool checked_on_gpu(std::string_view name, const std::string& what, std::string& why_not,
                    std::span<const std::string_view> list) {
  if (!held_back(name, list)) return true;
  why_not = what + (what.empty() ? "" : " ") + "not yet checked against ref on a GPU, so not offered (DNNGRAPH_UNCHECKED_ENGINES=" +
            std::string(name) + " offers it, for the GPU tests)";
  return false;
}

}  // namespace dnngraph::cuda
