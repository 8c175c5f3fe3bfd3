// A kernel template's configuration in generated source. The kernels (kernels/*.cuh) take one
// struct of named compile-time members instead of positional template arguments; the host side
// writes it from a typed struct, one member per line:
//   struct KernelConfig {
//     enum : int { kDataType = dg::DT_BFLOAT16 };
//     enum : int { kTileM = 128 };
//     enum : bool { kAKMajor = true };
//     using Epilogue = dg_gen::Epilogue;
//   };
// Enumerators rather than static constexpr members: NVRTC emits a device global for each of
// those, which would change the cubin (not its code) for nothing.
#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "dnngraph/types.hpp"

namespace dnngraph::cuda {

// The name the generated kernel passes to its template: dg::gemm_mma_sync<KernelConfig>(...).
inline constexpr const char* kKernelConfig = "KernelConfig";

// The kernels' name of a data type (dg_types.cuh): "dg::DT_HALF".
std::string kernel_dtype(DataType t);

// The members of the GEMM cores that the matmul and the implicit-GEMM convolution kernels share.
// mma.sync (kernels/gemm_mma_sync.cuh): kDataType, the tile kTileM x kTileN x kTileK over
// kWarpsM x kWarpsN warps, kStages.
struct MmaSyncTile {
  DataType dtype;
  int tile_m, tile_n, tile_k, warps_m, warps_n, stages;
};
// wgmma (kernels/gemm_wgmma.cuh): kDataType, kTileN (tiles of 128 x kTileN), kStages, kSplitK.
struct WgmmaTile {
  DataType dtype;
  int tile_n, stages;
  bool split_k;
  DataType b_dtype = DataType::NOT_SET;  // B's type where it differs (FP8 formats mixed)
};

class KernelConfigSource {
 public:
  KernelConfigSource();
  KernelConfigSource& tile(const MmaSyncTile& t);
  KernelConfigSource& tile(const WgmmaTile& t);
  KernelConfigSource& dtype(std::string_view member, DataType t);
  KernelConfigSource& value(std::string_view member, int64_t v);
  KernelConfigSource& flag(std::string_view member, bool v);
  KernelConfigSource& type(std::string_view member, std::string_view type);
  std::string str() const;

 private:
  std::ostringstream os_;
};

}  // namespace dnngraph::cuda
