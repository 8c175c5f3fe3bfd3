// The part of cuBLASLt (cublasLt.h, CUDA 12 and 13) that dnngraph uses, declared here so that the
// build needs no CUDA toolkit. Values follow cublasLt.h, cublas_api.h and library_types.h;
// tests/unit/test_cudnn_abi.cpp checks them against the real headers where they are installed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vendor_library.hpp"

namespace dnngraph::cublaslt {

using cublasStatus_t = int;
using LtHandle = struct cublasLtContext*;
using MatmulDesc = void*;    // cublasLtMatmulDesc_t
using MatrixLayout = void*;  // cublasLtMatrixLayout_t
using Preference = void*;    // cublasLtMatmulPreference_t

inline constexpr cublasStatus_t STATUS_SUCCESS = 0;

#define DG_LT_ENUMERATOR(name, value) name = value,

// cudaDataType_t (CUDA_R_<name>)
#define DG_LT_DATA_TYPES(X) X(32F, 0) X(64F, 1) X(16F, 2) X(8I, 3) X(32I, 10) X(16BF, 14) X(8F_E4M3, 28) X(8F_E5M2, 29)
enum class CudaType : int {
#define DG_LT_CUDA_TYPE(name, value) R_##name = value,
  DG_LT_DATA_TYPES(DG_LT_CUDA_TYPE)
#undef DG_LT_CUDA_TYPE
};

// cublasComputeType_t (CUBLAS_COMPUTE_<name>)
#define DG_LT_COMPUTE_TYPES(X) X(16F, 64) X(32F, 68) X(64F, 70) X(32F_FAST_TF32, 77)
enum class ComputeType : int {
#define DG_LT_COMPUTE(name, value) C_##name = value,
  DG_LT_COMPUTE_TYPES(DG_LT_COMPUTE)
#undef DG_LT_COMPUTE
};

// cublasOperation_t (CUBLAS_OP_<name>)
#define DG_LT_OPS(X) X(N, 0) X(T, 1)
enum class Op : int { DG_LT_OPS(DG_LT_ENUMERATOR) };

// cublasLtMatmulDescAttributes_t (CUBLASLT_MATMUL_DESC_<name>)
#define DG_LT_DESC_ATTRS(X)                                                                                  \
  X(COMPUTE_TYPE, 0) X(SCALE_TYPE, 1) X(POINTER_MODE, 2) X(TRANSA, 3) X(TRANSB, 4) X(EPILOGUE, 7)            \
  X(BIAS_POINTER, 8) X(AMAX_D_POINTER, 21) X(BIAS_DATA_TYPE, 26)
enum class DescAttr : int { DG_LT_DESC_ATTRS(DG_LT_ENUMERATOR) };

// cublasLtMatrixLayoutAttribute_t (CUBLASLT_MATRIX_LAYOUT_<name>)
#define DG_LT_LAYOUT_ATTRS(X) X(TYPE, 0) X(ORDER, 1) X(ROWS, 2) X(COLS, 3) X(LD, 4) X(BATCH_COUNT, 5) \
  X(STRIDED_BATCH_OFFSET, 6)
enum class LayoutAttr : int { DG_LT_LAYOUT_ATTRS(DG_LT_ENUMERATOR) };

// cublasLtEpilogue_t (CUBLASLT_EPILOGUE_<name>)
#define DG_LT_EPILOGUES(X) X(DEFAULT, 1) X(RELU, 2) X(BIAS, 4) X(RELU_BIAS, 6) X(GELU, 32) X(GELU_BIAS, 36)
enum class Epilogue : int { DG_LT_EPILOGUES(DG_LT_ENUMERATOR) };

// cublasLtMatmulPreferenceAttributes_t (CUBLASLT_MATMUL_PREF_<name>)
#define DG_LT_PREF_ATTRS(X) X(MAX_WORKSPACE_BYTES, 1) X(MIN_ALIGNMENT_A_BYTES, 5) X(MIN_ALIGNMENT_B_BYTES, 6) \
  X(MIN_ALIGNMENT_C_BYTES, 7) X(MIN_ALIGNMENT_D_BYTES, 8)
enum class PrefAttr : int { DG_LT_PREF_ATTRS(DG_LT_ENUMERATOR) };

// cublasLtMatmulAlgoConfigAttributes_t (CUBLASLT_ALGO_CONFIG_<name>); the value sizes differ.
#define DG_LT_ALGO_ATTRS(X) X(ID, 0) X(TILE_ID, 1) X(SPLITK_NUM, 2) X(REDUCTION_SCHEME, 3) X(CTA_SWIZZLING, 4) \
  X(CUSTOM_OPTION, 5) X(STAGES_ID, 6) X(INNER_SHAPE_ID, 7) X(CLUSTER_SHAPE_ID, 8)
enum class AlgoAttr : int { DG_LT_ALGO_ATTRS(DG_LT_ENUMERATOR) };

// cublasLtMatmulAlgo_t: semi-opaque, "can be trivially serialized and restored for use with the
// same version of cuBLAS".
struct MatmulAlgo {
  uint64_t data[8];
};

// cublasLtMatmulHeuristicResult_t
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspace_size;
  cublasStatus_t state;
  float waves_count;
  int reserved[4];
};

// The entry points dnngraph calls: X(return type, name, parameters).
#define DG_LT_ENTRY_POINTS(X) \
  X(size_t, cublasLtGetVersion, ()) \
  X(const char*, cublasLtGetStatusName, (cublasStatus_t)) \
  X(const char*, cublasLtGetStatusString, (cublasStatus_t)) \
  X(cublasStatus_t, cublasLtCreate, (LtHandle*)) \
  X(cublasStatus_t, cublasLtDestroy, (LtHandle)) \
  X(cublasStatus_t, cublasLtMatmulDescCreate, (MatmulDesc*, int compute, int scale)) \
  X(cublasStatus_t, cublasLtMatmulDescDestroy, (MatmulDesc)) \
  X(cublasStatus_t, cublasLtMatmulDescSetAttribute, (MatmulDesc, int, const void*, size_t)) \
  X(cublasStatus_t, cublasLtMatrixLayoutCreate, (MatrixLayout*, int type, uint64_t rows, uint64_t cols, int64_t ld)) \
  X(cublasStatus_t, cublasLtMatrixLayoutDestroy, (MatrixLayout)) \
  X(cublasStatus_t, cublasLtMatrixLayoutSetAttribute, (MatrixLayout, int, const void*, size_t)) \
  X(cublasStatus_t, cublasLtMatmulPreferenceCreate, (Preference*)) \
  X(cublasStatus_t, cublasLtMatmulPreferenceDestroy, (Preference)) \
  X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute, (Preference, int, const void*, size_t)) \
  X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, \
    (LtHandle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout, MatrixLayout, Preference, int, \
     HeuristicResult*, int*)) \
  X(cublasStatus_t, cublasLtMatmulAlgoInit, \
    (LtHandle, int compute, int scale, int a, int b, int c, int d, int algo_id, MatmulAlgo*)) \
  X(cublasStatus_t, cublasLtMatmulAlgoCheck, \
    (LtHandle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout, MatrixLayout, const MatmulAlgo*, \
     HeuristicResult*)) \
  X(cublasStatus_t, cublasLtMatmulAlgoConfigSetAttribute, (MatmulAlgo*, int, const void*, size_t)) \
  X(cublasStatus_t, cublasLtMatmulAlgoConfigGetAttribute, (const MatmulAlgo*, int, void*, size_t, size_t*)) \
  X(cublasStatus_t, cublasLtMatmul, \
    (LtHandle, MatmulDesc, const void* alpha, const void* a, MatrixLayout, const void* b, MatrixLayout, \
     const void* beta, const void* c, MatrixLayout, void* d, MatrixLayout, const MatmulAlgo*, void* workspace, \
     size_t workspace_bytes, void* stream))

struct LtApi {
  DG_LT_ENTRY_POINTS(DG_VENDOR_ENTRY_POINT)
};

// "CUBLAS_STATUS_NOT_SUPPORTED (the operation or data type combination is ...)": cuBLASLt's words.
std::string status_text(const LtApi& api, cublasStatus_t s);

// The library, loaded on first use (thread-safe) by the documented search order:
//   1. DNNGRAPH_CUBLASLT_PATH (the library file, or a folder holding libcublasLt.so*),
//   2. the system loader (libcublasLt.so.13, then .12),
//   3. the nvidia/cu13/lib or nvidia/cublas/lib folder of an installed nvidia-cublas Python wheel,
//   4. the CUDA toolkit's lib64 folder (/usr/local/cuda/lib64).
const LtApi* api();
const std::string& error();
const vendor::LibraryReport& library_report();  // version: e.g. 91900 (cuDNN), 130100 (cuBLASLt)

bool resolve_api(vendor::SymbolLookup lookup, void* context, LtApi& out, std::string& missing);

}  // namespace dnngraph::cublaslt
