// The few CUDA driver and NVRTC types and entry points dnngraph uses, declared here so that the
// build needs no CUDA toolkit. Values and layouts follow cuda.h / nvrtc.h (CUDA 12 and 13 ABI);
// entry points are resolved by name with dlsym (the *_v2 names where cuda.h maps to them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/vendor_library.hpp"

namespace dnngraph::cuda {

// ---- driver types
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUkernel = struct CUkern_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphNode = struct CUgraphNode_st*;
using CUgraphExec = struct CUgraphExec_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

// CUdevice_attribute values.
enum DeviceAttribute : int {
  ATTR_CLOCK_RATE = 13,                 // kHz
  ATTR_MULTIPROCESSOR_COUNT = 16,
  ATTR_MEMORY_CLOCK_RATE = 36,          // kHz
  ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,    // bits
  ATTR_L2_CACHE_SIZE = 38,              // bytes
  ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  ATTR_UNIFIED_ADDRESSING = 41,
  ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

inline constexpr int POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
inline constexpr int POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
inline constexpr unsigned MEMORYTYPE_HOST = 1, MEMORYTYPE_DEVICE = 2, MEMORYTYPE_UNIFIED = 4;
inline constexpr unsigned STREAM_NON_BLOCKING = 1;
inline constexpr unsigned EVENT_DEFAULT = 0;
inline constexpr int STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr int STREAM_CAPTURE_STATUS_NONE = 0;
inline constexpr int FUNC_ATTRIBUTE_NUM_REGS = 4;
// CUgraphNodeType values.
inline constexpr int GRAPH_NODE_TYPE_KERNEL = 0, GRAPH_NODE_TYPE_MEMSET = 2, GRAPH_NODE_TYPE_GRAPH = 4,
                     GRAPH_NODE_TYPE_EMPTY = 5;

// CUDA_KERNEL_NODE_PARAMS_v2.
struct KernelNodeParams {
  CUfunction func;
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  void** kernel_params;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
};

// CUDA_MEMSET_NODE_PARAMS (v1).
struct MemsetNodeParams {
  CUdeviceptr dst;
  size_t pitch;
  unsigned value;
  unsigned element_size;
  size_t width;
  size_t height;
};

// CUgraphExecUpdateResultInfo (v1).
struct GraphExecUpdateResultInfo {
  int result;
  CUgraphNode error_node;
  CUgraphNode error_from_node;
};

// The driver entry points dnngraph calls, resolved once by driver(): X(return type, name,
// parameters), or X_V2 for those that cuda.h maps to the name's _v2 symbol.
#define DG_CUDA_DRIVER_ENTRY_POINTS(X, X_V2) \
  X(CUresult, cuInit, (unsigned)) \
  X(CUresult, cuDriverGetVersion, (int*)) \
  X(CUresult, cuGetErrorName, (CUresult, const char**)) \
  X(CUresult, cuGetErrorString, (CUresult, const char**)) \
  X(CUresult, cuDeviceGetCount, (int*)) \
  X(CUresult, cuDeviceGet, (CUdevice*, int)) \
  X(CUresult, cuDeviceGetName, (char*, int, CUdevice)) \
  X(CUresult, cuDeviceGetAttribute, (int*, int, CUdevice)) \
  X_V2(CUresult, cuDeviceTotalMem, (size_t*, CUdevice)) \
  X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext*, CUdevice)) \
  X_V2(CUresult, cuDevicePrimaryCtxRelease, (CUdevice)) \
  X(CUresult, cuCtxSetCurrent, (CUcontext)) \
  X(CUresult, cuCtxGetCurrent, (CUcontext*)) \
  X(CUresult, cuCtxSynchronize, ()) \
  X_V2(CUresult, cuMemAlloc, (CUdeviceptr*, size_t)) \
  X_V2(CUresult, cuMemFree, (CUdeviceptr)) \
  X_V2(CUresult, cuMemGetInfo, (size_t*, size_t*)) \
  X_V2(CUresult, cuMemcpyHtoDAsync, (CUdeviceptr, const void*, size_t, CUstream)) \
  X_V2(CUresult, cuMemcpyDtoHAsync, (void*, CUdeviceptr, size_t, CUstream)) \
  X_V2(CUresult, cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
  X(CUresult, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream)) \
  X(CUresult, cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream)) \
  X(CUresult, cuPointerGetAttribute, (void*, int, CUdeviceptr)) \
  X(CUresult, cuStreamCreate, (CUstream*, unsigned)) \
  X_V2(CUresult, cuStreamDestroy, (CUstream)) \
  X(CUresult, cuStreamSynchronize, (CUstream)) \
  X_V2(CUresult, cuStreamBeginCapture, (CUstream, int)) \
  X(CUresult, cuStreamEndCapture, (CUstream, CUgraph*)) \
  X(CUresult, cuStreamIsCapturing, (CUstream, int*)) \
  X(CUresult, cuEventCreate, (CUevent*, unsigned)) \
  X(CUresult, cuEventRecord, (CUevent, CUstream)) \
  X(CUresult, cuEventSynchronize, (CUevent)) \
  X_V2(CUresult, cuEventDestroy, (CUevent)) \
  X(CUresult, cuModuleLoadData, (CUmodule*, const void*)) \
  X(CUresult, cuModuleUnload, (CUmodule)) \
  X(CUresult, cuModuleGetFunction, (CUfunction*, CUmodule, const char*)) \
  X(CUresult, cuFuncGetAttribute, (int*, int, CUfunction)) \
  X(CUresult, cuOccupancyMaxActiveBlocksPerMultiprocessor, (int*, CUfunction, int, size_t)) \
  X(CUresult, cuLaunchKernel, \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**)) \
  X(CUresult, cuGraphCreate, (CUgraph*, unsigned)) \
  X(CUresult, cuGraphDestroy, (CUgraph)) \
  X(CUresult, cuGraphAddChildGraphNode, (CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUgraph)) \
  X(CUresult, cuGraphChildGraphNodeGetGraph, (CUgraphNode, CUgraph*)) \
  X(CUresult, cuGraphGetNodes, (CUgraph, CUgraphNode*, size_t*)) \
  X(CUresult, cuGraphDestroyNode, (CUgraphNode)) \
  X(CUresult, cuGraphNodeGetType, (CUgraphNode, int*)) \
  X_V2(CUresult, cuGraphKernelNodeGetParams, (CUgraphNode, KernelNodeParams*)) \
  X_V2(CUresult, cuGraphKernelNodeSetParams, (CUgraphNode, const KernelNodeParams*)) \
  X(CUresult, cuGraphMemsetNodeGetParams, (CUgraphNode, MemsetNodeParams*)) \
  X(CUresult, cuGraphMemsetNodeSetParams, (CUgraphNode, const MemsetNodeParams*)) \
  X(CUresult, cuGraphInstantiateWithFlags, (CUgraphExec*, CUgraph, unsigned long long)) \
  X_V2(CUresult, cuGraphExecUpdate, (CUgraphExec, CUgraph, GraphExecUpdateResultInfo*)) \
  X(CUresult, cuGraphLaunch, (CUgraphExec, CUstream)) \
  X(CUresult, cuGraphExecDestroy, (CUgraphExec))

struct DriverApi {
  DG_CUDA_DRIVER_ENTRY_POINTS(DG_VENDOR_ENTRY_POINT, DG_VENDOR_ENTRY_POINT)
  // cuda.h 12.8+ maps it to cuEventElapsedTime_v2; older drivers have only the first (loader.cpp).
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
};

// ---- NVRTC
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;

// The NVRTC entry points dnngraph calls: X(return type, name, parameters).
#define DG_NVRTC_ENTRY_POINTS(X) \
  X(nvrtcResult, nvrtcVersion, (int*, int*)) \
  X(const char*, nvrtcGetErrorString, (nvrtcResult)) \
  X(nvrtcResult, nvrtcCreateProgram, \
    (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*)) \
  X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram*)) \
  X(nvrtcResult, nvrtcCompileProgram, (nvrtcProgram, int, const char* const*)) \
  X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram, size_t*)) \
  X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram, char*)) \
  X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram, size_t*)) \
  X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram, char*)) \
  X(nvrtcResult, nvrtcGetNumSupportedArchs, (int*)) \
  X(nvrtcResult, nvrtcGetSupportedArchs, (int*))

struct NvrtcApi {
  DG_NVRTC_ENTRY_POINTS(DG_VENDOR_ENTRY_POINT)
};

// The driver, loaded on first use (thread-safe); null when libcuda could not be loaded or cuInit
// failed. driver_error() then says why.
const DriverApi* driver();
const std::string& driver_error();
int driver_version();  // e.g. 13000 for CUDA 13.0; 0 when not loaded
const std::vector<std::string>& driver_search_log();
// NVRTC, loaded on first use by the documented search order; null when none was found.
const NvrtcApi* nvrtc();
const std::string& nvrtc_error();
// Where NVRTC was loaded from, and its version as major*10+minor (e.g. 130), once loaded.
const std::string& nvrtc_path();
int nvrtc_version();
const std::vector<std::string>& nvrtc_search_log();

}  // namespace dnngraph::cuda
