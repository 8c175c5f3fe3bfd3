// The toolkit's cuDNN and cuBLASLt headers, for test_cudnn_abi.cpp. tests/CMakeLists.txt defines
// DG_HAVE_CUDNN_HEADERS / DG_HAVE_CUBLASLT_HEADERS only where this file compiles with them on the
// machine that builds (some CUDA images ship one header without those it includes).
#pragma once

#if DG_HAVE_CUDNN_HEADERS
// cudnn_graph.h includes <cuda_runtime_api.h> only for cudaStream_t and cudaGraph_t (driver_types.h):
// that include is skipped by its guard, so the check needs no CUDA runtime headers beyond these.
#define __CUDA_RUNTIME_API_H__
#include <driver_types.h>
#include <library_types.h>
#include <cudnn_graph.h>
#endif

#if DG_HAVE_CUBLASLT_HEADERS
// cublas_api.h includes <cuda_fp16.h> and <cuda_bf16.h> for types it uses by pointer only.
#define __CUDA_FP16_H__
#define __CUDA_BF16_H__
struct __half;
struct __nv_bfloat16;
#include <cublasLt.h>
#endif
