// Helpers for the CPU engine tests: a graph run on ref and on one CPU engine (every plan index,
// outputs poisoned with NaN before each run) compared element by element; and the plan-list
// checks of the rejection tests (explain() text, packed tensors, a non-CPU handle, a bad isa knob).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/dims.hpp"
#include "engines/cpu/cpu_features.hpp"
#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "planning/engine.hpp"
#include "ref_test_util.hpp"

namespace cpu_test {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
using ref_test::Build;

// Runs the graph `build` makes on ref and on `engine` (every plan index, each checked to be that
// engine alone), outputs poisoned with NaN before each run, and compares every output. tol < 0:
// each output's type tolerance; else at least that. |want| below `floor` compares absolutely.
// With no workspace needed, the plan gets none (a null pointer); else one poisoned with NaN.
// threads > 0: the handle's pool size.
inline void check_engine_vs_ref(const std::string& engine, std::vector<HostTensor> inputs,
                                const std::vector<HostTensor>& outs, const Build& build, double tol = -1.0,
                                double floor = 1e-3, int threads = 0) {
  std::vector<HostTensor> want;
  auto s = ref_test::run_build_on_ref(inputs, outs, build, want);
  ASSERT_TRUE(s.ok()) << s.to_string();

  dg::Handle handle(dg::Device::cpu());
  if (threads > 0) handle.set_num_threads(threads);
  dg::Graph g;
  std::vector<HostTensor> got;
  dg::VariantPack pack;
  ref_test::declare_graph(g, inputs, outs, build, got, pack);
  g.select_engines({engine});
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  s = g.check_support(handle);
  ASSERT_TRUE(s.ok()) << s.to_string() << "\n" << g.explain();
  ASSERT_GE(g.get_execution_plan_count(), 1);
  for (int64_t idx = 0; idx < g.get_execution_plan_count(); ++idx) {
    std::string name;
    ASSERT_TRUE(g.build_plan_at_index(handle, idx).ok());
    ASSERT_TRUE(g.get_plan_name_at_index(idx, name).ok());
    EXPECT_EQ(name.rfind(engine, 0), 0u) << name;
    EXPECT_EQ(name.find(" + "), std::string::npos) << "more than one partition: " << name;
    for (auto& t : got) {  // poison again before every plan
      const int64_t span = static_cast<int64_t>(t.bytes.size()) / dg::size_of(t.dtype);
      for (int64_t i = 0; i < span; ++i) dg::dtype::store(t.bytes.data(), t.dtype, i, std::nan(""));
    }
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size(ws).ok());  // execute checks the largest built plan's need
    // All-ones bytes (NaN floats): a plan that reads workspace it did not write shows it.
    std::vector<unsigned char> workspace(static_cast<size_t>(ws), 0xFF);
    s = g.execute_plan_at_index(handle, pack, ws ? workspace.data() : nullptr, idx, ws);
    ASSERT_TRUE(s.ok()) << name << ": " << s.to_string();
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(name + ", output " + std::to_string(i));
      const double t = tol >= 0 ? std::max(tol, ref_test::tolerance(got[i].dtype)) : -1.0;
      ref_test::expect_near(got[i], [&](const Dims& ix) { return want[i].get(ix); }, t, floor);
    }
  }
}

// The kernel ISA levels this CPU runs, lowest first.
inline std::vector<dg::cpu::Isa> supported_isas() {
  std::vector<dg::cpu::Isa> out;
  for (auto isa : {dg::cpu::Isa::PORTABLE, dg::cpu::Isa::AVX2, dg::cpu::Isa::AVX512})
    if (dg::cpu::cpu_features().supports(isa)) out.push_back(isa);
  return out;
}

// check(isa) for each ISA level this CPU runs, lowest first, under a trace naming it.
template <typename Check>
void for_each_isa(Check check) {
  for (dg::cpu::Isa isa : supported_isas()) {
    SCOPED_TRACE(dg::cpu::isa_name(isa));
    check(isa);
  }
}

// A user tensor with packed row-major strides.
inline dg::TensorPtr packed(dg::Graph& g, const std::string& name, const Dims& dims, dg::DataType t = dg::DataType::FLOAT) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(test_dims::packed(dims)).set_data_type(t));
}

// g taken through validate, build_operation_graph and create_execution_plans (heuristics A) on
// the CPU; its explain() text, where every engine's verdict stands.
inline std::string explain(dg::Graph& g) {
  dg::Handle handle(dg::Device::cpu());
  EXPECT_TRUE(g.validate().ok()) << g.validate().to_string();
  EXPECT_TRUE(g.build_operation_graph(handle).ok());
  EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  return g.explain();
}

// Expects `engine` rejected in `explain` with a reason that starts with `reason`.
inline void expect_rejected(const std::string& engine, const std::string& explain, const std::string& reason) {
  EXPECT_NE(explain.find(engine + ": rejected: " + reason), std::string::npos) << explain;
}

// g's first partition (lowered on the CPU) checked by `engine` for a CUDA handle: rejected as
// CPU-only. With `isa_knob`, also built for the CPU with knob isa=7: rejected as unsupported.
inline void expect_cpu_only(const dg::Engine& engine, dg::Graph& g, bool isa_knob) {
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(dg::partition_graph(*impl_of(g).ir, parts).ok());
  dg::HandleImpl gpu;
  gpu.device = dg::Device::cuda(0);
  dg::Target t;
  t.handle = &gpu;
  const auto s = engine.check(parts.at(0), t);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("runs on the CPU only"), std::string::npos) << s.reason;
  if (!isa_knob) return;
  dg::Target c;
  c.handle = &impl_of(cpu);
  std::unique_ptr<dg::Plan> plan;
  // 7 names no ISA at all: the engine's knob schema rejects it, in build and in check_knobs.
  const auto b = engine.build(parts.at(0), c, {{"isa", 7}}, plan);
  EXPECT_EQ(b.code(), dg::ErrorCode::INVALID_VALUE);
  EXPECT_NE(b.message().find("knob isa=7 is not in 0..2"), std::string::npos) << b.message();
  EXPECT_EQ(engine.check_knobs({{"isa", 7}}).code(), dg::ErrorCode::INVALID_VALUE);
  EXPECT_TRUE(engine.check_knobs({{"isa", 0}}).ok());
  // A real ISA this CPU lacks is a valid setting that cannot be built here.
  if (!dg::cpu::cpu_features().supports(dg::cpu::Isa::AVX512)) {
    const auto u = engine.build(parts.at(0), c, {{"isa", 2}}, plan);
    EXPECT_NE(u.message().find("knob isa=2 is not supported by this CPU"), std::string::npos) << u.message();
  }
}

}  // namespace cpu_test
