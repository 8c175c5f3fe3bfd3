// The graphs, dims and partition description the cuda_norm_rowwise tests share (test_cuda_norm.cpp,
// test_cuda_norm_gpu.cpp).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "common/scoped_env.hpp"
#include "engines/cuda/norm/norm_problem.hpp"
#include "gemm_test_util.hpp"

namespace norm_test {

namespace dg = dnngraph;
namespace nm = dnngraph::cuda::norm;
using gemm_test::Dims;
using gemm_test::HostTensor;
using T = dg::DataType;

inline constexpr const char* kEngine = "cuda_norm_rowwise";

// Sets an environment variable for one scope, restoring the old value after.
using test_env::ScopedEnv;

inline Dims packed_strides(const Dims& d) { return test_dims::packed(d); }
inline Dims row_param(const Dims& x) {
  Dims d = x;
  d[0] = 1;
  return d;
}
inline Dims stat_dims(const Dims& x) {
  Dims d(x.size(), 1);
  d[0] = x[0];
  return d;
}

inline dg::TensorPtr declare(dg::Graph& g, const std::string& name, const Dims& d, T t, Dims strides = {}) {
  if (strides.empty()) strides = packed_strides(d);
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(d).set_stride(strides).set_data_type(t));
}

// The types of one test graph: X (and DY), Y or DX, scale and bias (and DSCALE/DBIAS).
struct Types {
  T io, out, param;
};

// Forward graphs: layernorm (bias, statistics as outputs when `stats`) or rmsnorm (bias optional).
// Returns the outputs (Y, then the statistics when `stats`).
inline std::vector<dg::TensorPtr> add_forward(dg::Graph& g, bool layernorm, const Dims& x, Types t, bool bias, bool stats,
                                       Dims x_strides = {}) {
  g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
  auto X = declare(g, "X", x, t.io, x_strides);
  auto S = declare(g, "SCALE", row_param(x), t.param);
  const auto phase = stats ? dg::NormFwdPhase::TRAINING : dg::NormFwdPhase::INFERENCE;
  std::vector<dg::TensorPtr> outs;
  if (layernorm) {
    auto o = g.layernorm(X, S, declare(g, "BIAS", row_param(x), t.param),
                         dg::LayernormAttr().set_name("ln").set_epsilon(1e-5).set_forward_phase(phase));
    outs.assign(o.begin(), stats ? o.end() : o.begin() + 1);
  } else {
    auto a = dg::RmsnormAttr().set_name("rms").set_epsilon(1e-5).set_forward_phase(phase);
    if (bias) a.set_bias(declare(g, "BIAS", row_param(x), t.param));
    auto o = g.rmsnorm(X, S, a);
    outs.assign(o.begin(), stats ? o.end() : o.begin() + 1);
  }
  outs[0]->set_output(true).set_data_type(t.out);
  for (size_t i = 1; i < outs.size(); ++i) outs[i]->set_output(true).set_data_type(T::FLOAT);
  return outs;
}

inline void add_backward(dg::Graph& g, bool layernorm, const Dims& x, Types t, bool dbias) {
  g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
  auto DY = declare(g, "DY", x, t.io), X = declare(g, "X", x, t.io), S = declare(g, "SCALE", row_param(x), t.param);
  std::array<dg::TensorPtr, 3> o;
  if (layernorm)
    o = g.layernorm_backward(DY, X, S, declare(g, "MEAN", stat_dims(x), T::FLOAT),
                             declare(g, "INV", stat_dims(x), T::FLOAT), dg::LayernormBackwardAttr().set_name("dln"));
  else
    o = g.rmsnorm_backward(DY, X, S, declare(g, "INV", stat_dims(x), T::FLOAT),
                           dg::RmsnormBackwardAttr().set_name("drms").set_has_dbias(dbias));
  o[0]->set_output(true).set_data_type(t.out);
  o[1]->set_output(true).set_data_type(t.param);
  if (dbias) o[2]->set_output(true).set_data_type(t.param);
}

// The graph's one partition, described; false (with the reason) when describe() refuses it.
inline ::testing::AssertionResult describe(dg::Graph& g, nm::NormProblem& pr, std::string& why, dg::Partition* part = nullptr) {
  gemm_test::Lowered low;
  dg::Handle cpu(dg::Device::cpu());
  if (auto s = g.validate(); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  if (auto s = g.build_operation_graph(cpu); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  std::vector<dg::Partition> parts;
  if (auto s = dg::partition_graph(*impl_of(g).ir, parts); !s.ok()) return ::testing::AssertionFailure() << s.to_string();
  if (parts.size() != 1) return ::testing::AssertionFailure() << parts.size() << " partitions";
  if (part) *part = parts[0];
  if (!nm::describe(parts[0], pr, why)) return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

}  // namespace norm_test
