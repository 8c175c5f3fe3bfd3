// The input types the CUDA tensor-core engines (matmul and implicit-GEMM convolution) take:
// BFLOAT16 or HALF, both operands the same; FLOAT x FLOAT rounded to TF32 where the graph allows
// it; FP8 pairs where the engine says so; fp32 accumulation.
#pragma once
#include <cstdint>
#include <string>

#include "engines/cuda/common/epilogue_layout.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cuda {

// The rule for FLOAT inputs, for rejections.
inline constexpr const char* kTf32Rule =
    "FLOAT inputs run on tensor cores as TF32 only when the graph allows it (Graph::set_allow_tf32(true))";

// The inputs an engine takes besides BFLOAT16 and HALF pairs and FLOAT ones as TF32 where the graph
// allows it: exact FLOAT as three TF32 products where it does not (the wgmma cores' 3xTF32,
// kernels/tf32x3_split.cuh), FP8 pairs (e4m3 or e5m2, mixed or not; wgmma's k32 form, cuda_gemm_wgmma_tma).
struct TensorCoreInputs {
  bool exact_fp32 = false;
  bool fp8 = false;
};

// 3xTF32's share of the bf16 tensor-core peak in the engines' estimates: TF32's half over three
// products, less the small parts' shared-memory pass (90%: a prediction before the first GPU run;
// the calibration table corrects it per class, measured / estimated 0.72-0.96 on an H100 on
// 2026-12-07). It divides the FLOPs only: the pass slows the products, not the memory traffic.
inline constexpr double kTf32x3Rate = 0.5 / 3.0 * 0.9;

// Whether node n's operands a and b and its compute type fit; false with `why` naming the node,
// the tensor (a) and the rule.
bool check_tensor_core_types(const ir::Graph& g, const ir::Node& n, const ir::Tensor& a, const ir::Tensor& b,
                             std::string& why, TensorCoreInputs inputs = {});

// A tensor-core op's anchor: the node, its two inputs and its output.
struct TensorCoreOperands {
  const ir::Node* node = nullptr;
  const ir::Tensor* in0 = nullptr;
  const ir::Tensor* in1 = nullptr;
  const ir::Tensor* out = nullptr;
};

// The partition's `Attr` anchor (`op` names it) and its operands, the inputs' types checked
// (check_tensor_core_types); false with `why`.
template <class Attr>
bool tensor_core_anchor(const Partition& p, const char* op, TensorCoreOperands& o, std::string& why,
                        TensorCoreInputs inputs = {}) {
  o.node = anchor_of<Attr>(p, op, why);
  if (!o.node) return false;
  o.in0 = &p.tensor(o.node->inputs[0]);
  o.in1 = &p.tensor(o.node->inputs[1]);
  o.out = &p.tensor(o.node->outputs[0]);
  return check_tensor_core_types(*p.graph, *o.node, *o.in0, *o.in1, why, inputs);
}

// The kernels index with 32-bit ints: sizes, coordinates and tile counts stay at most this.
inline constexpr int64_t kMaxKernelInt = INT32_MAX;

// Whether `value` (what: "the GEMM's K", "dim 2", ...) of tensor t at node n fits a kernel's
// 32-bit int; false with `why` naming the node, the tensor, the value and the limit.
bool fits_kernel_int(const ir::Node& n, const ir::Tensor& t, const std::string& what, int64_t value, std::string& why);

}  // namespace dnngraph::cuda
