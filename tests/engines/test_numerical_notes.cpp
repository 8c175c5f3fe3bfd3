// Numerical notes by engine (no GPU needed: they follow from the partition and the knobs): the own
// CUDA engines that multiply on tensor cores say TENSOR_CORE, and DOWN_CONVERT_INPUTS for FLOAT
// inputs run as TF32; cuBLASLt says TENSOR_CORE except for exact FLOAT; the CPU Winograd engine
// says WINOGRAD and WINOGRAD_TILE_6x6.
#include <gtest/gtest.h>

#include <algorithm>

#include "gemm_test_util.hpp"

namespace {

namespace dg = dnngraph;
using N = dg::NumericalNote;

dg::TensorPtr declare(dg::Graph& g, const char* name, std::vector<int64_t> dims, dg::DataType t) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
}

// The notes `engine` gives its first knob setting for a 64x96x32 matmul of type t.
std::vector<N> matmul_notes(const char* engine, dg::DataType t, bool tf32, dg::Knobs knobs = {}) {
  dg::Graph g;
  g.set_io_data_type(t).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(tf32);
  auto c = g.matmul(declare(g, "A", {1, 64, 32}, t), declare(g, "B", {1, 32, 96}, t), dg::MatmulAttr());
  c->set_output(true).set_data_type(dg::DataType::FLOAT);
  gemm_test::Lowered low;
  EXPECT_TRUE(gemm_test::lower_graph(g, low));
  gemm_test::FakeHopper hopper;
  const dg::Engine* e = dg::engine_by_id(dg::engine_id_by_name(engine));
  if (!e) {
    ADD_FAILURE() << "no engine " << engine;
    return {};
  }
  return e->numerical_notes(low.parts[0], hopper.target, knobs);
}

bool has(const std::vector<N>& notes, N n) { return std::find(notes.begin(), notes.end(), n) != notes.end(); }

TEST(NumericalNotes, OwnTensorCoreEnginesAndTf32) {
  for (const char* engine : {"cuda_gemm_mma_sync", "cuda_gemm_wgmma_tma"}) {
    SCOPED_TRACE(engine);
    const auto bf16 = matmul_notes(engine, dg::DataType::BFLOAT16, false);
    EXPECT_TRUE(has(bf16, N::TENSOR_CORE));
    EXPECT_FALSE(has(bf16, N::DOWN_CONVERT_INPUTS));
    const auto tf32 = matmul_notes(engine, dg::DataType::FLOAT, true);
    EXPECT_TRUE(has(tf32, N::TENSOR_CORE));
    EXPECT_TRUE(has(tf32, N::DOWN_CONVERT_INPUTS));
  }
}

TEST(NumericalNotes, CublasLtByPrecision) {
  EXPECT_TRUE(has(matmul_notes("cublaslt", dg::DataType::HALF, false), N::TENSOR_CORE));
  EXPECT_TRUE(matmul_notes("cublaslt", dg::DataType::FLOAT, false).empty());  // exact fp32
  const auto tf32 = matmul_notes("cublaslt", dg::DataType::FLOAT, true);
  EXPECT_TRUE(has(tf32, N::TENSOR_CORE) && has(tf32, N::DOWN_CONVERT_INPUTS));
  EXPECT_FALSE(has(matmul_notes("cublaslt", dg::DataType::HALF, false, {{"splitk", 4}, {"reduction", 1}}), N::NONDETERMINISTIC));
}

TEST(NumericalNotes, CpuEnginesButWinogradHaveNone) {
  EXPECT_TRUE(matmul_notes("cpu_gemm_packed", dg::DataType::FLOAT, false).empty());
  const dg::Engine* w = dg::engine_by_id(dg::engine_id_by_name("cpu_conv_winograd_f4x3"));
  ASSERT_NE(w, nullptr);
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto y = g.conv_fprop(declare(g, "X", {1, 8, 10, 10}, dg::DataType::FLOAT), declare(g, "W", {8, 8, 3, 3}, dg::DataType::FLOAT),
                        dg::ConvFpropAttr().set_padding({1, 1}));
  y->set_output(true);
  gemm_test::Lowered low;
  ASSERT_TRUE(gemm_test::lower_graph(g, low));
  dg::Target cpu_target;
  const auto notes = w->numerical_notes(low.parts[0], cpu_target, {});
  EXPECT_TRUE(has(notes, N::WINOGRAD) && has(notes, N::WINOGRAD_TILE_6x6));
}

}  // namespace
