#include "engines/cuda/common/tensor_core_types.hpp"

#include "core/dtype.hpp"

namespace dnngraph::cuda {

bool check_tensor_core_types(const ir::Graph& g, const ir::Node& n, const ir::Tensor& a, const ir::Tensor& b,
                             std::string& why, TensorCoreInputs inputs) {
  const std::string where = "node '" + n.name + "', tensor '" + a.name + "': ";
  const bool half = a.dtype == DataType::BFLOAT16 || a.dtype == DataType::HALF;
  const bool fp8 = dtype::is_fp8(a.dtype) && dtype::is_fp8(b.dtype);  // the two formats may mix
  if (a.dtype == b.dtype && a.dtype == DataType::FLOAT && !g.allow_tf32 && !inputs.exact_fp32) {
    why = where + kTf32Rule;
    return false;
  }
  if (!(fp8 && inputs.fp8) && (a.dtype != b.dtype || !(half || a.dtype == DataType::FLOAT))) {
    why = where + "inputs of type " + std::string(to_string(a.dtype)) + " x " + std::string(to_string(b.dtype)) +
          " are not supported (BFLOAT16 or HALF, both the same; FLOAT x FLOAT as TF32" +
          (inputs.fp8 ? "; FP8_E4M3 or FP8_E5M2, either with either)" : ")");
    return false;
  }
  if (n.compute_type != DataType::FLOAT && n.compute_type != DataType::NOT_SET) {
    why = "node '" + n.name + "': compute type " + std::string(to_string(n.compute_type)) +
          " is not supported (fp32 accumulation)";
    return false;
  }
  return true;
}

bool fits_kernel_int(const ir::Node& n, const ir::Tensor& t, const std::string& what, int64_t value, std::string& why) {
  if (value >= 0 && value <= kMaxKernelInt) return true;
  why = "node '" + n.name + "', tensor '" + t.name + "': " + what + " is " + std::to_string(value) +
        "; the kernel indexes it with a 32-bit int (at most " + std::to_string(kMaxKernelInt) + ")";
  return false;
}

}  // namespace dnngraph::cuda
