// The engine registry: one line per engine. Ids are append-only: they key tuning records and
// serialized plans, so an id is never reused or renumbered.
#include "engines/cpu/conv/conv_depthwise_direct.hpp"
#include "engines/cpu/conv/conv_grouped_direct.hpp"
#include "engines/cpu/conv/conv_implicit_gemm.hpp"
#include "engines/cpu/conv/conv_wgrad_gemm.hpp"
#include "engines/cpu/conv/conv_winograd_f4x3.hpp"
#include "engines/cpu/gemm/cpu_gemm_packed.hpp"
#include "engines/cpu/layout/layout_copy.hpp"
#include "engines/cpu/norm/norm_grouped.hpp"
#include "engines/cpu/norm/norm_rowwise.hpp"
#include "engines/cpu/pointwise/pointwise_fused.hpp"
#include "engines/cpu/pool/pool_direct.hpp"
#include "engines/cpu/sdpa/sdpa_backward_flash.hpp"
#include "engines/cpu/sdpa/sdpa_flash.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cuda/conv/conv_depthwise_direct.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "engines/cuda/gemm/gemm_mma_sync.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/layout/layout_copy.hpp"
#include "engines/cuda/norm/norm_rowwise.hpp"
#include "engines/cuda/pointwise/pointwise_jit.hpp"
#include "engines/cuda/pool/pool_direct.hpp"
#include "engines/cuda/sdpa/sdpa_backward_flash.hpp"
#include "engines/cuda/sdpa/sdpa_flash.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/ref/ref_engine.hpp"
#include "planning/engine.hpp"

namespace dnngraph {

const std::vector<RegisteredEngine>& engine_registry() {
  static const std::vector<RegisteredEngine> kEngines{
      {0, &ref::engine()},
      {1, &cpu::pointwise_fused_engine()},
      {2, &cpu::gemm_packed_engine()},
      {3, &cpu::conv_implicit_gemm_engine()},
      {4, &cpu::conv_winograd_f4x3_engine()},
      {5, &cpu::conv_depthwise_direct_engine()},
      {6, &cpu::norm_rowwise_engine()},
      {7, &cpu::pool_direct_engine()},
      {8, &cpu::sdpa_flash_engine()},
      {9, &cuda::pointwise_jit_engine()},
      {10, &cuda::gemm_wgmma_tma_engine()},
      {11, &cuda::conv_implicit_gemm_engine()},
      {12, &cuda::sdpa_flash_engine()},
      {13, &cudnn::engine()},
      {14, &cublaslt::engine()},
      {15, &cuda::conv_depthwise_direct_engine()},
      {16, &cuda::gemm_mma_sync_engine()},
      {17, &cpu::conv_grouped_direct_engine()},
      {18, &cpu::norm_grouped_engine()},
      {19, &cpu::sdpa_backward_flash_engine()},
      {20, &cuda::sdpa_backward_flash_engine()},
      {21, &cpu::layout_copy_engine()},
      {22, &cuda::layout_copy_engine()},
      {23, &cuda::norm_rowwise_engine()},
      {24, &cuda::pool_direct_engine()},
      {25, &cpu::conv_wgrad_gemm_engine()},
  };
  return kEngines;
}

const Engine* engine_by_id(int id) {
  for (const auto& e : engine_registry())
    if (e.id == id) return e.engine;
  return nullptr;
}

int engine_id_by_name(std::string_view name) {
  for (const auto& e : engine_registry())
    if (e.engine->name() == name) return e.id;
  return -1;
}

}  // namespace dnngraph
