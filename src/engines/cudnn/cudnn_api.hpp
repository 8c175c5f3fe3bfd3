// The part of the cuDNN backend API (cudnn_graph.h, cuDNN 9) that dnngraph uses, declared here so
// that the build needs neither cuDNN nor the CUDA toolkit. Values follow cudnn_graph.h; the
// compile-only test tests/unit/test_cudnn_abi.cpp checks every one against the real header where it
// is installed. Entry points are resolved with dlsym into CudnnApi, a table of function pointers, so
// tests can hand the lowering code a fake table.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vendor_library.hpp"

namespace dnngraph::cudnn {

using cudnnStatus_t = int;
using cudnnHandle_t = struct cudnnContext*;
using BackendDescriptor = void*;

inline constexpr cudnnStatus_t STATUS_SUCCESS = 0;
inline constexpr cudnnStatus_t STATUS_NOT_SUPPORTED = 3000;

#define DG_CUDNN_ENUMERATOR(name, value) name = value,

// cudnnBackendDescriptorType_t
#define DG_CUDNN_DESCS(X) \
  X(POINTWISE, 0) X(CONVOLUTION, 1) X(ENGINE, 2) X(ENGINECFG, 3) X(ENGINEHEUR, 4) \
  X(EXECUTION_PLAN, 5) X(KNOB_CHOICE, 7) X(OPERATION_CONVOLUTION_FORWARD, 10) \
  X(OPERATION_CONVOLUTION_BACKWARD_FILTER, 11) X(OPERATION_CONVOLUTION_BACKWARD_DATA, 12) \
  X(OPERATION_POINTWISE, 13) X(OPERATION_GEN_STATS, 14) X(OPERATIONGRAPH, 15) X(VARIANT_PACK, 16) X(TENSOR, 17) X(MATMUL, 18) \
  X(OPERATION_MATMUL, 19) X(REDUCTION, 21) X(OPERATION_REDUCTION, 22) X(KERNEL_CACHE, 34)
enum class Desc : int { DG_CUDNN_DESCS(DG_CUDNN_ENUMERATOR) };

// cudnnBackendAttributeName_t
#define DG_CUDNN_ATTRS(X) \
  X(POINTWISE_MODE, 0) X(POINTWISE_MATH_PREC, 1) X(POINTWISE_RELU_LOWER_CLIP, 3) \
  X(POINTWISE_RELU_UPPER_CLIP, 4) X(POINTWISE_RELU_LOWER_CLIP_SLOPE, 5) X(POINTWISE_ELU_ALPHA, 6) \
  X(POINTWISE_SOFTPLUS_BETA, 7) X(POINTWISE_SWISH_BETA, 8) X(POINTWISE_AXIS, 9) \
  X(CONVOLUTION_COMP_TYPE, 100) X(CONVOLUTION_CONV_MODE, 101) X(CONVOLUTION_DILATIONS, 102) \
  X(CONVOLUTION_FILTER_STRIDES, 103) X(CONVOLUTION_POST_PADDINGS, 104) \
  X(CONVOLUTION_PRE_PADDINGS, 105) X(CONVOLUTION_SPATIAL_DIMS, 106) X(ENGINEHEUR_MODE, 200) \
  X(ENGINEHEUR_OPERATION_GRAPH, 201) X(ENGINEHEUR_RESULTS, 202) X(ENGINECFG_ENGINE, 300) \
  X(ENGINECFG_KNOB_CHOICES, 302) X(EXECUTION_PLAN_HANDLE, 400) X(EXECUTION_PLAN_ENGINE_CONFIG, 401) \
  X(EXECUTION_PLAN_WORKSPACE_SIZE, 402) X(EXECUTION_PLAN_JSON_REPRESENTATION, 405) \
  X(EXECUTION_PLAN_KERNEL_CACHE, 406) X(KNOB_CHOICE_KNOB_TYPE, 600) X(KNOB_CHOICE_KNOB_VALUE, 601) \
  X(OPERATION_CONVOLUTION_FORWARD_ALPHA, 700) X(OPERATION_CONVOLUTION_FORWARD_BETA, 701) \
  X(OPERATION_CONVOLUTION_FORWARD_CONV_DESC, 702) X(OPERATION_CONVOLUTION_FORWARD_W, 703) \
  X(OPERATION_CONVOLUTION_FORWARD_X, 704) X(OPERATION_CONVOLUTION_FORWARD_Y, 705) \
  X(OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 706) X(OPERATION_CONVOLUTION_BWD_DATA_BETA, 707) \
  X(OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, 708) X(OPERATION_CONVOLUTION_BWD_DATA_W, 709) \
  X(OPERATION_CONVOLUTION_BWD_DATA_DX, 710) X(OPERATION_CONVOLUTION_BWD_DATA_DY, 711) \
  X(OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 712) X(OPERATION_CONVOLUTION_BWD_FILTER_BETA, 713) \
  X(OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, 714) X(OPERATION_CONVOLUTION_BWD_FILTER_DW, 715) \
  X(OPERATION_CONVOLUTION_BWD_FILTER_X, 716) X(OPERATION_CONVOLUTION_BWD_FILTER_DY, 717) \
  X(OPERATION_POINTWISE_PW_DESCRIPTOR, 750) X(OPERATION_POINTWISE_XDESC, 751) \
  X(OPERATION_POINTWISE_BDESC, 752) X(OPERATION_POINTWISE_YDESC, 753) \
  X(OPERATION_POINTWISE_DXDESC, 756) X(OPERATION_POINTWISE_DYDESC, 757) \
  X(OPERATION_POINTWISE_TDESC, 758) X(OPERATION_GENSTATS_MODE, 770) X(OPERATION_GENSTATS_MATH_PREC, 771) \
  X(OPERATION_GENSTATS_XDESC, 772) X(OPERATION_GENSTATS_SUMDESC, 773) X(OPERATION_GENSTATS_SQSUMDESC, 774) \
  X(OPERATIONGRAPH_HANDLE, 800) X(OPERATIONGRAPH_OPS, 801) \
  X(OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED, 803) X(TENSOR_BYTE_ALIGNMENT, 900) \
  X(TENSOR_DATA_TYPE, 901) X(TENSOR_DIMENSIONS, 902) X(TENSOR_STRIDES, 903) X(TENSOR_UNIQUE_ID, 906) \
  X(TENSOR_IS_VIRTUAL, 907) X(TENSOR_IS_BY_VALUE, 908) X(VARIANT_PACK_UNIQUE_IDS, 1000) \
  X(VARIANT_PACK_DATA_POINTERS, 1001) X(VARIANT_PACK_WORKSPACE, 1003) X(ENGINE_OPERATION_GRAPH, 1300) \
  X(ENGINE_GLOBAL_INDEX, 1301) X(ENGINE_NUMERICAL_NOTE, 1303) X(ENGINE_BEHAVIOR_NOTE, 1305) \
  X(MATMUL_COMP_TYPE, 1500) X(OPERATION_MATMUL_ADESC, 1520) X(OPERATION_MATMUL_BDESC, 1521) \
  X(OPERATION_MATMUL_CDESC, 1522) X(OPERATION_MATMUL_DESC, 1523) \
  X(OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, 1525) X(OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, 1526) \
  X(OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, 1527) X(REDUCTION_OPERATOR, 1600) \
  X(REDUCTION_COMP_TYPE, 1601) X(OPERATION_REDUCTION_XDESC, 1610) X(OPERATION_REDUCTION_YDESC, 1611) \
  X(OPERATION_REDUCTION_DESC, 1612) X(KERNEL_CACHE_OPERATION_GRAPH, 2400)
enum class Attr : int { DG_CUDNN_ATTRS(DG_CUDNN_ENUMERATOR) };

// cudnnBackendAttributeType_t
#define DG_CUDNN_ATTR_TYPES(X) \
  X(HANDLE, 0) X(DATA_TYPE, 1) X(BOOLEAN, 2) X(INT64, 3) X(FLOAT, 4) X(DOUBLE, 5) X(VOID_PTR, 6) \
  X(CONVOLUTION_MODE, 7) X(HEUR_MODE, 8) X(KNOB_TYPE, 9) X(NUMERICAL_NOTE, 11) X(POINTWISE_MODE, 14) \
  X(BACKEND_DESCRIPTOR, 15) X(GENSTATS_MODE, 16) X(REDUCTION_OPERATOR_TYPE, 18) X(BEHAVIOR_NOTE, 19) X(CHAR, 24)
enum class AttrType : int { DG_CUDNN_ATTR_TYPES(DG_CUDNN_ENUMERATOR) };

// cudnnDataType_t
#define DG_CUDNN_DTYPES(X) \
  X(FLOAT, 0) X(DOUBLE, 1) X(HALF, 2) X(INT8, 3) X(INT32, 4) X(UINT8, 6) X(BFLOAT16, 9) X(INT64, 10) \
  X(BOOLEAN, 11) X(FP8_E4M3, 12) X(FP8_E5M2, 13)
enum class Dtype : int { DG_CUDNN_DTYPES(DG_CUDNN_ENUMERATOR) };

// cudnnPointwiseMode_t (the names match dnngraph::PointwiseMode's).
#define DG_CUDNN_PW_MODES(X) \
  X(ADD, 0) X(MUL, 1) X(MIN, 2) X(MAX, 3) X(SQRT, 4) X(ADD_SQUARE, 5) X(DIV, 6) X(MOD, 7) X(POW, 8) \
  X(SUB, 9) X(ABS, 10) X(CEIL, 11) X(COS, 12) X(EXP, 13) X(FLOOR, 14) X(LOG, 15) X(NEG, 16) \
  X(RSQRT, 17) X(SIN, 18) X(TAN, 19) X(ERF, 20) X(IDENTITY, 21) X(RECIPROCAL, 22) X(ATAN2, 23) \
  X(RELU_FWD, 100) X(TANH_FWD, 101) X(SIGMOID_FWD, 102) X(ELU_FWD, 103) X(GELU_FWD, 104) \
  X(SOFTPLUS_FWD, 105) X(SWISH_FWD, 106) X(GELU_APPROX_TANH_FWD, 107) X(RELU_BWD, 200) \
  X(TANH_BWD, 201) X(SIGMOID_BWD, 202) X(ELU_BWD, 203) X(GELU_BWD, 204) X(SOFTPLUS_BWD, 205) \
  X(SWISH_BWD, 206) X(GELU_APPROX_TANH_BWD, 207) X(CMP_EQ, 300) X(CMP_NEQ, 301) X(CMP_GT, 302) \
  X(CMP_GE, 303) X(CMP_LT, 304) X(CMP_LE, 305) X(LOGICAL_AND, 400) X(LOGICAL_OR, 401) \
  X(LOGICAL_NOT, 402) X(GEN_INDEX, 501) X(BINARY_SELECT, 601)
enum class PwMode : int { DG_CUDNN_PW_MODES(DG_CUDNN_ENUMERATOR) };

// cudnnReduceTensorOp_t (the backend's reduction operator type).
#define DG_CUDNN_REDUCE_OPS(X) \
  X(ADD, 0) X(MUL, 1) X(MIN, 2) X(MAX, 3) X(AMAX, 4) X(AVG, 5) X(NORM1, 6) X(NORM2, 7)
enum class ReduceOp : int { DG_CUDNN_REDUCE_OPS(DG_CUDNN_ENUMERATOR) };

// cudnnConvolutionMode_t
#define DG_CUDNN_CONV_MODES(X) \
  X(CONVOLUTION, 0) X(CROSS_CORRELATION, 1)
enum class ConvMode : int { DG_CUDNN_CONV_MODES(DG_CUDNN_ENUMERATOR) };

// cudnnBackendHeurMode_t
#define DG_CUDNN_HEUR_MODES(X) \
  X(INSTANT, 0) X(B, 1) X(FALLBACK, 2) X(A, 3)
enum class HeurMode : int { DG_CUDNN_HEUR_MODES(DG_CUDNN_ENUMERATOR) };

// cudnnBackendNumericalNote_t (those dnngraph reads)
#define DG_CUDNN_NUMERICAL_NOTES(X) \
  X(TENSOR_CORE, 0) X(DOWN_CONVERT_INPUTS, 1) X(NONDETERMINISTIC, 4) X(TYPE_COUNT, 10)
enum class NumericalNote : int { DG_CUDNN_NUMERICAL_NOTES(DG_CUDNN_ENUMERATOR) };

// cudnnBackendBehaviorNote_t (those dnngraph reads)
#define DG_CUDNN_BEHAVIOR_NOTES(X) \
  X(RUNTIME_COMPILATION, 0) X(REQUIRES_FILTER_INT8x32_REORDER, 1) X(REQUIRES_BIAS_INT8x32_REORDER, 2) \
  X(SUPPORTS_CUDA_GRAPH_NATIVE_API, 3) X(TYPE_COUNT, 5)
enum class BehaviorNote : int { DG_CUDNN_BEHAVIOR_NOTES(DG_CUDNN_ENUMERATOR) };

// cudnnBackendKnobType_t. Knob names in plan labels are these, lower-cased: knob_type_name().
#define DG_CUDNN_KNOB_TYPES(X) \
  X(SPLIT_K, 0) X(SWIZZLE, 1) X(TILE_SIZE, 2) X(USE_TEX, 3) X(EDGE, 4) X(KBLOCK, 5) X(LDGA, 6) \
  X(LDGB, 7) X(CHUNK_K, 8) X(SPLIT_H, 9) X(WINO_TILE, 10) X(MULTIPLY, 11) X(SPLIT_K_BUF, 12) \
  X(TILEK, 13) X(STAGES, 14) X(REDUCTION_MODE, 15) X(CTA_SPLIT_K_MODE, 16) X(SPLIT_K_SLC, 17) \
  X(IDX_MODE, 18) X(SLICED, 19) X(SPLIT_RS, 20) X(SINGLEBUFFER, 21) X(LDGC, 22) X(SPECFILT, 23) \
  X(KERNEL_CFG, 24) X(WORKSPACE, 25) X(TILE_CGA, 26) X(TILE_CGA_M, 27) X(TILE_CGA_N, 28) \
  X(BLOCK_SIZE, 29) X(OCCUPANCY, 30) X(ARRAY_SIZE_PER_THREAD, 31) X(NUM_C_PER_BLOCK, 32) \
  X(SPLIT_COLS, 33) X(TILE_ROWS, 34) X(TILE_COLS, 35) X(LOAD_SIZE, 36) X(CTA_COUNT, 37) \
  X(STREAM_K, 38) X(SPLIT_P_SLC, 39) X(TILE_M, 40) X(TILE_N, 41) X(WARP_SPEC_CFG, 42) X(SWAP_AB, 43) \
  X(COUNTS, 44)
enum class KnobType : int { DG_CUDNN_KNOB_TYPES(DG_CUDNN_ENUMERATOR) };
// "split_k", "tile_size", ...; "knob<N>" for a type newer than this table.
std::string knob_type_name(int knob_type);

// The entry points dnngraph calls: X(return type, name, parameters).
#define DG_CUDNN_ENTRY_POINTS(X) \
  X(size_t, cudnnGetVersion, ()) \
  X(size_t, cudnnGetCudartVersion, ()) \
  X(const char*, cudnnGetErrorString, (cudnnStatus_t)) \
  X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t*)) \
  X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t)) \
  X(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t, void*)) \
  X(cudnnStatus_t, cudnnBackendCreateDescriptor, (int, BackendDescriptor*)) \
  X(cudnnStatus_t, cudnnBackendDestroyDescriptor, (BackendDescriptor)) \
  X(cudnnStatus_t, cudnnBackendFinalize, (BackendDescriptor)) \
  X(cudnnStatus_t, cudnnBackendSetAttribute, (BackendDescriptor, int, int, int64_t, const void*)) \
  X(cudnnStatus_t, cudnnBackendGetAttribute, (BackendDescriptor, int, int, int64_t, int64_t*, void*)) \
  X(cudnnStatus_t, cudnnBackendExecute, (cudnnHandle_t, BackendDescriptor, BackendDescriptor))
// Null when the library lacks them: cudnnGetLastErrorString before cuDNN 9.0, the CUDA-graph pair
// (handle, plan, variant pack, cudaGraph_t) before 9.5.
#define DG_CUDNN_OPTIONAL_ENTRY_POINTS(X) \
  X(void, cudnnGetLastErrorString, (char*, size_t)) \
  X(cudnnStatus_t, cudnnBackendPopulateCudaGraph, (cudnnHandle_t, BackendDescriptor, BackendDescriptor, void*)) \
  X(cudnnStatus_t, cudnnBackendUpdateCudaGraph, (cudnnHandle_t, BackendDescriptor, BackendDescriptor, void*))

struct CudnnApi {
  DG_CUDNN_ENTRY_POINTS(DG_VENDOR_ENTRY_POINT)
  DG_CUDNN_OPTIONAL_ENTRY_POINTS(DG_VENDOR_ENTRY_POINT)
};

// "CUDNN_STATUS_NOT_SUPPORTED_SHAPE (cuDNN's last error message)": both of cuDNN's own words.
std::string status_text(const CudnnApi& api, cudnnStatus_t s);

// The library, loaded on first use (thread-safe) by the documented search order:
//   1. DNNGRAPH_CUDNN_PATH (the library file, or a folder holding libcudnn.so*),
//   2. the system loader (libcudnn.so.9: LD_LIBRARY_PATH, ldconfig),
//   3. the nvidia/cudnn/lib folder of an installed nvidia-cudnn-cu1x Python wheel,
//   4. the CUDA toolkit's lib64 folder (/usr/local/cuda/lib64).
// Null when not found; error() then says so, with every path tried.
const CudnnApi* api();
const std::string& error();
const vendor::LibraryReport& library_report();  // version: e.g. 91900 (cuDNN), 130100 (cuBLASLt)

// Resolves every entry point of CudnnApi through `lookup`; false, with the first missing name in
// `missing`, when one is absent.
bool resolve_api(vendor::SymbolLookup lookup, void* context, CudnnApi& out, std::string& missing);

}  // namespace dnngraph::cudnn
