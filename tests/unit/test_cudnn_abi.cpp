// Compile-time check of dnngraph's own declarations of the cuDNN backend API and cuBLASLt
// (src/engines/cudnn/cudnn_api.hpp, src/engines/cublaslt/cublaslt_api.hpp) against the real
// headers, where the CUDA toolkit's headers compile on the building machine (tests/CMakeLists.txt
// checks). Every enumerator of the X-lists is compared with the header's; a mismatch fails the
// build. Without the headers this file checks nothing and its test skips.
#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

#include "engines/cublaslt/cublaslt_api.hpp"
#include "engines/cudnn/cudnn_api.hpp"

#include "unit/vendor_abi_headers.hpp"

namespace dg_cudnn = dnngraph::cudnn;
namespace dg_lt = dnngraph::cublaslt;

#define DG_SAME(ours, theirs) \
  static_assert(static_cast<long long>(ours) == static_cast<long long>(theirs), #ours " differs from " #theirs);

#if DG_HAVE_CUDNN_HEADERS
#define DG_CHECK_DESC(name, value) DG_SAME(dg_cudnn::Desc::name, CUDNN_BACKEND_##name##_DESCRIPTOR)
DG_CUDNN_DESCS(DG_CHECK_DESC)
#define DG_CHECK_ATTR(name, value) DG_SAME(dg_cudnn::Attr::name, CUDNN_ATTR_##name)
DG_CUDNN_ATTRS(DG_CHECK_ATTR)
#define DG_CHECK_ATTR_TYPE(name, value) DG_SAME(dg_cudnn::AttrType::name, CUDNN_TYPE_##name)
DG_CUDNN_ATTR_TYPES(DG_CHECK_ATTR_TYPE)
#define DG_CHECK_DTYPE(name, value) DG_SAME(dg_cudnn::Dtype::name, CUDNN_DATA_##name)
DG_CUDNN_DTYPES(DG_CHECK_DTYPE)
#define DG_CHECK_PW(name, value) DG_SAME(dg_cudnn::PwMode::name, CUDNN_POINTWISE_##name)
DG_CUDNN_PW_MODES(DG_CHECK_PW)
#define DG_CHECK_REDUCE(name, value) DG_SAME(dg_cudnn::ReduceOp::name, CUDNN_REDUCE_TENSOR_##name)
DG_CUDNN_REDUCE_OPS(DG_CHECK_REDUCE)
#define DG_CHECK_CONV(name, value) DG_SAME(dg_cudnn::ConvMode::name, CUDNN_##name)
DG_CUDNN_CONV_MODES(DG_CHECK_CONV)
#define DG_CHECK_HEUR(name, value) DG_SAME(dg_cudnn::HeurMode::name, CUDNN_HEUR_MODE_##name)
DG_CUDNN_HEUR_MODES(DG_CHECK_HEUR)
#define DG_CHECK_NUM_NOTE(name, value) DG_SAME(dg_cudnn::NumericalNote::name, CUDNN_NUMERICAL_NOTE_##name)
DG_CUDNN_NUMERICAL_NOTES(DG_CHECK_NUM_NOTE)
#define DG_CHECK_BEH_NOTE(name, value) DG_SAME(dg_cudnn::BehaviorNote::name, CUDNN_BEHAVIOR_NOTE_##name)
DG_CUDNN_BEHAVIOR_NOTES(DG_CHECK_BEH_NOTE)
#define DG_CHECK_KNOB(name, value) DG_SAME(dg_cudnn::KnobType::name, CUDNN_KNOB_TYPE_##name)
DG_CUDNN_KNOB_TYPES(DG_CHECK_KNOB)
DG_SAME(dg_cudnn::STATUS_SUCCESS, CUDNN_STATUS_SUCCESS)
DG_SAME(dg_cudnn::STATUS_NOT_SUPPORTED, CUDNN_STATUS_NOT_SUPPORTED)
// The table passes these enums as int.
static_assert(sizeof(cudnnBackendAttributeName_t) == sizeof(int) && sizeof(cudnnStatus_t) == sizeof(int) &&
              sizeof(cudnnBackendDescriptorType_t) == sizeof(int) && sizeof(cudnnBackendAttributeType_t) == sizeof(int));
// Entry points without enums in their signature have exactly the header's types.
static_assert(std::is_same_v<decltype(&::cudnnGetVersion), decltype(dg_cudnn::CudnnApi::cudnnGetVersion)>);
static_assert(std::is_same_v<decltype(&::cudnnGetLastErrorString), decltype(dg_cudnn::CudnnApi::cudnnGetLastErrorString)>);
static_assert(std::is_same_v<decltype(&::cudnnGetCudartVersion), decltype(dg_cudnn::CudnnApi::cudnnGetCudartVersion)>);
#endif

#if DG_HAVE_CUBLASLT_HEADERS
#define DG_CHECK_CUDA_TYPE(name, value) DG_SAME(dg_lt::CudaType::R_##name, CUDA_R_##name)
DG_LT_DATA_TYPES(DG_CHECK_CUDA_TYPE)
#define DG_CHECK_COMPUTE(name, value) DG_SAME(dg_lt::ComputeType::C_##name, CUBLAS_COMPUTE_##name)
DG_LT_COMPUTE_TYPES(DG_CHECK_COMPUTE)
#define DG_CHECK_OP(name, value) DG_SAME(dg_lt::Op::name, CUBLAS_OP_##name)
DG_LT_OPS(DG_CHECK_OP)
#define DG_CHECK_DESC_ATTR(name, value) DG_SAME(dg_lt::DescAttr::name, CUBLASLT_MATMUL_DESC_##name)
DG_LT_DESC_ATTRS(DG_CHECK_DESC_ATTR)
#define DG_CHECK_LAYOUT_ATTR(name, value) DG_SAME(dg_lt::LayoutAttr::name, CUBLASLT_MATRIX_LAYOUT_##name)
DG_LT_LAYOUT_ATTRS(DG_CHECK_LAYOUT_ATTR)
#define DG_CHECK_EPILOGUE(name, value) DG_SAME(dg_lt::Epilogue::name, CUBLASLT_EPILOGUE_##name)
DG_LT_EPILOGUES(DG_CHECK_EPILOGUE)
#define DG_CHECK_PREF(name, value) DG_SAME(dg_lt::PrefAttr::name, CUBLASLT_MATMUL_PREF_##name)
DG_LT_PREF_ATTRS(DG_CHECK_PREF)
#define DG_CHECK_ALGO(name, value) DG_SAME(dg_lt::AlgoAttr::name, CUBLASLT_ALGO_CONFIG_##name)
DG_LT_ALGO_ATTRS(DG_CHECK_ALGO)
DG_SAME(dg_lt::STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS)
static_assert(sizeof(dg_lt::MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(dg_lt::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(dg_lt::HeuristicResult, workspace_size) == offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(dg_lt::HeuristicResult, state) == offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(dg_lt::HeuristicResult, waves_count) == offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(sizeof(cublasLtEpilogue_t) == sizeof(uint32_t) && sizeof(cublasOperation_t) == sizeof(int32_t) &&
              sizeof(cudaDataType_t) == sizeof(int) && sizeof(cublasComputeType_t) == sizeof(int));
static_assert(std::is_same_v<decltype(&::cublasLtGetVersion), decltype(dg_lt::LtApi::cublasLtGetVersion)>);
#endif

TEST(VendorAbi, KnobNamesCoverTheHeader) {
#if DG_HAVE_CUDNN_HEADERS
  // Every knob type the header knows has a name in dnngraph's table (labels never say "knob<N>").
  for (int t = 0; t < static_cast<int>(CUDNN_KNOB_TYPE_COUNTS); ++t)
    EXPECT_NE(dg_cudnn::knob_type_name(t).rfind("knob", 0), 0u) << "knob type " << t;
  EXPECT_EQ(dg_cudnn::knob_type_name(static_cast<int>(CUDNN_KNOB_TYPE_TILE_SIZE)), "tile_size");
  EXPECT_EQ(dg_cudnn::knob_type_name(static_cast<int>(CUDNN_KNOB_TYPE_COUNTS)),
            "knob" + std::to_string(static_cast<int>(CUDNN_KNOB_TYPE_COUNTS)));
#else
  GTEST_SKIP() << "the cuDNN headers (cudnn_graph.h) are not on this machine's CUDA include path";
#endif
}
