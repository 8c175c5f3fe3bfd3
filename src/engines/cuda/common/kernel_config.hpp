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

class KernelConfigSource {
 public:
  KernelConfigSource();
  KernelConfigSource& dtype(std::string_view member, DataType t);
  KernelConfigSource& value(std::string_view member, int64_t v);
  KernelConfigSource& flag(std::string_view member, bool v);
  KernelConfigSource& type(std::string_view member, std::string_view type);
  std::string str() const;

 private:
  std::ostringstream os_;
};

}  // namespace dnngraph::cuda
