// What the two matmul engines (cuda_gemm_mma_sync, cuda_gemm_wgmma_tma) share around their
// plan: the cost model, the rules for FLOAT (TF32) and FP8 operands, and the build (compile or reload).
#pragma once
#include <memory>
#include <string_view>

#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/tensor_core_notes.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"

namespace dnngraph::cuda::gemm {

// Predicted seconds for configuration c at `efficiency` of the device's bf16 peak.
double matmul_seconds(const Partition& p, const Target& t, const MatmulConfig& c, double efficiency);

// Whether c's tf32 and transpose settings fit the operands; the error names node, tensor and rule.
Status check_tf32(const Partition& p, const MatmulProblem& mp, const MatmulConfig& c, std::string_view engine);

// Whether FP8 operands fit: wgmma's k32 form reads both K-major (no transposes, no copy pass), and
// the FP8 kernels are held back (`gemm_fp8`, common/gpu_checked.hpp) until checked on a GPU; the
// error names node, tensor and rule. Other types pass.
Status check_fp8(const Partition& p, const MatmulProblem& mp, std::string_view engine);

// Describes the partition and compiles (r null) or reloads (from r) its kernel: the plan.
Status build_matmul_plan(const Partition& p, const Target& t, const MatmulConfig& c, ByteReader* r,
                         std::string_view engine, std::unique_ptr<Plan>& plan);

// The frame of the matmul engines: typed knobs K, read into a MatmulConfig by config_of; build()
// and deserialize() go through build_matmul_plan.
template <class K, MatmulConfig (*config_of)(const K&)>
class MatmulEngine : public CompiledEngine<K> {
 public:
  MatmulEngine(std::string_view name, const KnobSchema<K>& schema) : CompiledEngine<K>(schema), name_(name) {}
  std::string_view name() const final { return name_; }
  // Both GEMM cores multiply on tensor cores (mma.sync, wgmma).
  std::vector<NumericalNote> numerical_notes(const Partition& p, const Target&, const Knobs&) const override {
    return tensor_core_notes(p);
  }

 protected:
  // For estimate_seconds: false where k is a setting the schema rejects.
  bool config(const Knobs& k, MatmulConfig& c) const {
    K knobs;
    if (!this->parse(k, knobs)) return false;
    c = config_of(knobs);
    return true;
  }

 private:
  Status make(const Partition& p, const Target& t, const Knobs& k, ByteReader* r,
              std::unique_ptr<Plan>& plan) const final {
    K knobs;
    if (auto s = read_knobs(this->schema_, k, this->knob_error(r), knobs); !s.ok()) return s;
    return build_matmul_plan(p, t, config_of(knobs), r, name_, plan);
  }

  std::string_view name_;
};

}  // namespace dnngraph::cuda::gemm
