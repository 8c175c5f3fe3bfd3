// The CPU executor of the fused expression list, run directly on hand-made programs: strips that
// carry into outer dims or step, broadcast loads, index, strided bf16 stores, per-thread
// reductions combined at the end; and every pointwise mode's fp32 loop against ref's formula.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/pointwise_modes.hpp"
#include "core/dtype.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/ref/ops.hpp"

namespace {

namespace dg = dnngraph;
namespace ex = dnngraph::expr;

int add_tensor(dg::ir::Graph& g, std::vector<int64_t> dims, std::vector<int64_t> strides, dg::DataType t,
               bool is_virtual = false) {
  dg::ir::Tensor x;
  x.id = static_cast<int>(g.tensors.size());
  x.name = "t" + std::to_string(x.id);
  x.dims = std::move(dims);
  x.strides = std::move(strides);
  x.dtype = t;
  x.is_virtual = is_virtual;
  g.tensors.push_back(x);
  return x.id;
}

ex::Instr instr(ex::InstrKind k, int dst, int tensor = -1, int s0 = -1, int s1 = -1) {
  ex::Instr in{};
  in.kind = k;
  in.dst = dst;
  in.tensor = tensor;
  in.src[0] = s0;
  in.src[1] = s1;
  return in;
}

// dst = op(s0[, s1]) in pointwise mode m.
ex::Instr apply(int dst, dg::PointwiseMode m, int s0, int s1 = -1) {
  auto in = instr(ex::InstrKind::APPLY, dst, -1, s0, s1);
  in.op.set_mode(m);
  return in;
}

// A program over `domain` that starts by loading the anchor node 0's output `anchor` into register 0.
ex::Program anchored_program(std::vector<int64_t> domain, int anchor) {
  ex::Program p;
  p.domain = std::move(domain);
  p.anchor_node = 0;
  p.anchor_output = anchor;
  p.code.push_back(instr(ex::InstrKind::LOAD_ANCHOR, 0));
  return p;
}

// The anchor values `a` (rows x cols, row-major) through e's program, a strip per row, on one slot.
dg::Status run_by_rows(const dg::cpu::Epilogue& e, const std::vector<void*>& ptrs, const std::vector<float>& a,
                       int64_t rows, int64_t cols) {
  dg::cpu::EpilogueRun run(e, ptrs, 1);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at[2] = {r, 0};
    run.strip(0, at, 1, cols, 1, a.data() + r * cols);
  }
  return run.finish();
}

// Domain [3, 5]: out = anchor + bias[1, 5] + index along dim 0, stored as bf16 with strides
// {1, 4} (column-major, padded); the anchor arrives in strips that carry and that step.
TEST(CpuEpilogue, StripsCarryStepAndStoreStrided) {
  dg::ir::Graph g;
  const int anchor = add_tensor(g, {3, 5}, {5, 1}, dg::DataType::FLOAT, true);
  const int bias = add_tensor(g, {1, 5}, {5, 1}, dg::DataType::FLOAT);
  const int out = add_tensor(g, {3, 5}, {1, 4}, dg::DataType::BFLOAT16);
  ex::Program p = anchored_program({3, 5}, anchor);
  p.code.push_back(instr(ex::InstrKind::LOAD, 1, bias));
  p.code.push_back(instr(ex::InstrKind::INDEX, 2));
  p.code.back().axis = 0;
  p.code.push_back(apply(3, dg::PointwiseMode::ADD, 0, 1));
  p.code.push_back(apply(4, dg::PointwiseMode::ADD, 3, 2));
  p.code.push_back(instr(ex::InstrKind::STORE, -1, out, 4));
  p.num_regs = 5;
  p.loads = {bias};
  p.stores = {out};
  dg::cpu::Epilogue e;
  std::string why;
  ASSERT_TRUE(e.init(p, g, why)) << why;
  EXPECT_EQ(e.plain_fp32_store(), -1);

  float bias_v[5] = {0.5f, -1.0f, 2.0f, 0.25f, 3.0f};
  std::vector<uint16_t> dst(4 * 5, 0x7fc0);  // NaN
  std::vector<void*> ptrs(g.tensors.size(), nullptr);
  ptrs[static_cast<size_t>(bias)] = bias_v;
  ptrs[static_cast<size_t>(out)] = dst.data();
  float anchor_v[15];
  for (int i = 0; i < 15; ++i) anchor_v[i] = 0.125f * static_cast<float>(i);
  dg::cpu::EpilogueRun run(e, ptrs, 2);
  const int64_t start[2] = {0, 2};
  run.strip(0, start, 1, 9, 1, anchor_v + 2);  // (0,2)..(0,4), (1,0)..(1,4), (2,0): carries twice
  const int64_t col[2] = {0, 1};
  const float c1[2] = {0.125f, 0.125f * 11};  // (0,1) and (2,1): a step of 2 along dim 0
  run.strip(1, col, 0, 2, 2, c1);
  const int64_t rest[2] = {2, 2};
  run.strip(0, rest, 1, 3, 1, anchor_v + 12);
  const int64_t first[2] = {0, 0};
  run.strip(1, first, 1, 1, 1, anchor_v);
  const int64_t mid[2] = {1, 1};  // (1,1) was written by the first strip: write it again
  run.strip(0, mid, 1, 1, 1, anchor_v + 6);
  ASSERT_TRUE(run.finish().ok());
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) {
      const float want = 0.125f * static_cast<float>(r * 5 + c) + bias_v[c] + static_cast<float>(r);
      EXPECT_EQ(dg::dtype::bf16_to_float(dst[static_cast<size_t>(r + c * 4)]), dg::dtype::bf16_to_float(dg::dtype::float_to_bf16(want)))
          << r << "," << c;
    }
}

// out = ReLU(bias[r] - anchor * scale[c]) into fp32: the chain form, run as one fused loop on
// whole rows (85 wide: a block of 8 vectors, single vectors and a scalar tail) and by the general executor on a strip that carries
// into the next row; -0 leaves ReLU as +0 and NaN stays NaN, as in ref's formula.
TEST(CpuEpilogue, ChainRunsAsOneLoopAndMatchesTheGeneralPath) {
  constexpr int kRows = 4, kCols = 85;
  dg::ir::Graph g;
  const int anchor = add_tensor(g, {kRows, kCols}, {kCols, 1}, dg::DataType::FLOAT, true);
  const int scale = add_tensor(g, {1, kCols}, {kCols, 1}, dg::DataType::FLOAT);
  const int bias = add_tensor(g, {kRows, 1}, {1, 1}, dg::DataType::FLOAT);
  const int out = add_tensor(g, {kRows, kCols}, {kCols, 1}, dg::DataType::FLOAT);
  ex::Program p = anchored_program({kRows, kCols}, anchor);
  p.code.push_back(instr(ex::InstrKind::LOAD, 1, scale));
  p.code.push_back(instr(ex::InstrKind::LOAD, 2, bias));
  p.code.push_back(apply(3, dg::PointwiseMode::MUL, 0, 1));
  p.code.push_back(apply(4, dg::PointwiseMode::SUB, 2, 3));  // bias - value
  const auto relu = apply(5, dg::PointwiseMode::RELU_FWD, 4);
  p.code.push_back(relu);
  p.code.push_back(instr(ex::InstrKind::STORE, -1, out, 5));
  p.num_regs = 6;
  p.loads = {scale, bias};
  p.stores = {out};
  dg::cpu::Epilogue e;
  std::string why;
  ASSERT_TRUE(e.init(p, g, why)) << why;
  ASSERT_NE(e.chain(), nullptr);

  std::mt19937 rng(41);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> a(kRows * kCols), sc(kCols), bi(kRows), dst(a.size(), std::nanf(""));
  for (auto& v : a) v = u(rng);
  for (auto& v : sc) v = u(rng);
  for (auto& v : bi) v = u(rng);
  a[5] = 0.0f;
  bi[0] = -0.0f;  // -0 - 0 * scale: -0 before ReLU
  // NaN stays NaN through ReLU (ref's rule) in the chain's vector body, its scalar tail and the
  // general executor.
  a[9] = a[kCols + 84] = a[2 * kCols + 17] = std::nanf("");
  std::vector<void*> ptrs(g.tensors.size(), nullptr);
  ptrs[static_cast<size_t>(scale)] = sc.data();
  ptrs[static_cast<size_t>(bias)] = bi.data();
  ptrs[static_cast<size_t>(out)] = dst.data();
  dg::cpu::EpilogueRun run(e, ptrs, 1);
  for (int r = 0; r < kRows - 2; ++r) {  // rows 0 and 1 by the chain
    const int64_t at[2] = {r, 0};
    run.strip(0, at, 1, kCols, 1, a.data() + r * kCols);
  }
  const int64_t at[2] = {2, 0};  // rows 2 and 3 in one strip that carries: the general executor
  run.strip(0, at, 1, 2 * kCols, 1, a.data() + 2 * kCols);
  ASSERT_TRUE(run.finish().ok());
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) {
      const float x = bi[static_cast<size_t>(r)] - a[static_cast<size_t>(r * kCols + c)] * sc[static_cast<size_t>(c)];
      const float want = static_cast<float>(dg::ref::pointwise_apply(relu.op, x, 0, 0));
      const float got = dst[static_cast<size_t>(r * kCols + c)];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << r << "," << c;
        continue;
      }
      EXPECT_EQ(got, want) << r << "," << c;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << r << "," << c;
    }
}

// The chain with bf16 / fp16 operands and stores (a bf16 conv's bias + ReLU into a bf16 output),
// and with no steps at all (the bf16 store alone): operands converted on load, the value rounded
// once at the store, in strips longer than the executor's chunk. Checked against the same
// arithmetic on the converted operands, rounded by dtype::round_to.
TEST(CpuEpilogue, ChainTakesHalfWidthOperandsAndStores) {
  constexpr int kRows = 3, kCols = 300;  // past kChunk (256): the scratch works in pieces
  using DT = dg::DataType;
  struct Case {
    DT scale, bias, out;
    bool steps;
  };
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> u(-3, 3);
  for (const Case cs : {Case{DT::BFLOAT16, DT::HALF, DT::BFLOAT16, true}, Case{DT::FLOAT, DT::BFLOAT16, DT::HALF, true},
                        Case{DT::HALF, DT::FLOAT, DT::FLOAT, true}, Case{DT::FLOAT, DT::FLOAT, DT::BFLOAT16, false}}) {
    SCOPED_TRACE(std::string(dg::to_string(cs.scale)) + " scale, " + std::string(dg::to_string(cs.bias)) + " bias, " +
                 std::string(dg::to_string(cs.out)) + (cs.steps ? " out" : " out, no steps"));
    dg::ir::Graph g;
    const int anchor = add_tensor(g, {kRows, kCols}, {kCols, 1}, DT::FLOAT, true);
    const int scale = add_tensor(g, {1, kCols}, {kCols, 1}, cs.scale);
    const int bias = add_tensor(g, {kRows, kCols}, {kCols, 1}, cs.bias);
    const int out = add_tensor(g, {kRows, kCols}, {kCols, 1}, cs.out);
    ex::Program p = anchored_program({kRows, kCols}, anchor);
    const auto relu = apply(5, dg::PointwiseMode::RELU_FWD, 4);
    if (cs.steps) {
      p.code.push_back(instr(ex::InstrKind::LOAD, 1, scale));
      p.code.push_back(instr(ex::InstrKind::LOAD, 2, bias));
      p.code.push_back(apply(3, dg::PointwiseMode::MUL, 0, 1));
      p.code.push_back(apply(4, dg::PointwiseMode::ADD, 3, 2));
      p.code.push_back(relu);
      p.code.push_back(instr(ex::InstrKind::STORE, -1, out, 5));
      p.loads = {scale, bias};
    } else {
      p.code.push_back(instr(ex::InstrKind::STORE, -1, out, 0));
    }
    p.num_regs = 6;
    p.stores = {out};
    dg::cpu::Epilogue e;
    std::string why;
    ASSERT_TRUE(e.init(p, g, why)) << why;
    ASSERT_NE(e.chain(), nullptr);
    EXPECT_FALSE(e.prepare_in_place(1) && !e.chain()->fp32_only()) << "in place takes fp32 chains only";

    auto typed = [&](DT t, size_t n) {  // random values held in type t
      std::vector<unsigned char> b(n * static_cast<size_t>(dg::size_of(t)));
      for (size_t i = 0; i < n; ++i) dg::dtype::store(b.data(), t, static_cast<int64_t>(i), u(rng));
      return b;
    };
    std::vector<float> a(kRows * kCols);
    for (auto& v : a) v = u(rng);
    auto sc = typed(cs.scale, kCols), bi = typed(cs.bias, a.size());
    std::vector<unsigned char> dst(a.size() * static_cast<size_t>(dg::size_of(cs.out)), 0xff);
    std::vector<void*> ptrs(g.tensors.size(), nullptr);
    ptrs[static_cast<size_t>(scale)] = sc.data();
    ptrs[static_cast<size_t>(bias)] = bi.data();
    ptrs[static_cast<size_t>(out)] = dst.data();
    ASSERT_TRUE(run_by_rows(e, ptrs, a, kRows, kCols).ok());
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        const int64_t i = r * kCols + c;
        float x = a[static_cast<size_t>(i)];
        if (cs.steps) {
          x = x * static_cast<float>(dg::dtype::load(sc.data(), cs.scale, c)) +
              static_cast<float>(dg::dtype::load(bi.data(), cs.bias, i));
          x = static_cast<float>(dg::ref::pointwise_apply(relu.op, x, 0, 0));
        }
        const double want = dg::dtype::round_to(cs.out, x);
        ASSERT_EQ(dg::dtype::load(dst.data(), cs.out, i), want) << r << "," << c;
      }
  }
}

// out = clip(anchor + bias[c]) for ReLU's bounds as ONNX's Clip gives them (ReLU6: [0, 6]; and
// [-1, 0.5]): the chain takes them, and gives ref's values in its vector body and scalar tail,
// the bounds themselves, -0 as +0 at a lower bound of 0, and NaN kept through both clips.
TEST(CpuEpilogue, ChainClipsAsReluBoundsDo) {
  constexpr int kRows = 3, kCols = 77;
  for (const auto& [lo, hi] : {std::pair{0.0, 6.0}, std::pair{-1.0, 0.5}}) {
    dg::ir::Graph g;
    const int anchor = add_tensor(g, {kRows, kCols}, {kCols, 1}, dg::DataType::FLOAT, true);
    const int bias = add_tensor(g, {1, kCols}, {kCols, 1}, dg::DataType::FLOAT);
    const int out = add_tensor(g, {kRows, kCols}, {kCols, 1}, dg::DataType::FLOAT);
    ex::Program p = anchored_program({kRows, kCols}, anchor);
    p.code.push_back(instr(ex::InstrKind::LOAD, 1, bias));
    p.code.push_back(apply(2, dg::PointwiseMode::ADD, 0, 1));
    auto clip = apply(3, dg::PointwiseMode::RELU_FWD, 2);
    clip.op.set_relu_lower_clip(lo).set_relu_upper_clip(hi);
    p.code.push_back(clip);
    p.code.push_back(instr(ex::InstrKind::STORE, -1, out, 3));
    p.num_regs = 4;
    p.loads = {bias};
    p.stores = {out};
    dg::cpu::Epilogue e;
    std::string why;
    ASSERT_TRUE(e.init(p, g, why)) << why;
    ASSERT_NE(e.chain(), nullptr);
    std::mt19937 rng(47);
    std::uniform_real_distribution<float> u(-8, 8);
    std::vector<float> a(kRows * kCols), bi(kCols), dst(a.size(), std::nanf(""));
    for (auto& v : a) v = u(rng);
    for (auto& v : bi) v = u(rng);
    bi[3] = bi[70] = 0.0f;
    a[3] = -0.0f;                                  // -0 + 0: +0
    a[kCols + 3] = static_cast<float>(hi);         // exactly the upper bound
    a[2 * kCols + 70] = static_cast<float>(lo);    // exactly the lower bound, in the scalar tail
    a[10] = a[kCols + 75] = a[2 * kCols + 40] = std::nanf("");
    std::vector<void*> ptrs(g.tensors.size(), nullptr);
    ptrs[static_cast<size_t>(bias)] = bi.data();
    ptrs[static_cast<size_t>(out)] = dst.data();
    ASSERT_TRUE(run_by_rows(e, ptrs, a, kRows, kCols).ok());
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c) {
        const float x = a[static_cast<size_t>(r * kCols + c)] + bi[static_cast<size_t>(c)];
        const float want = static_cast<float>(dg::ref::pointwise_apply(clip.op, x, 0, 0));
        const float got = dst[static_cast<size_t>(r * kCols + c)];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << lo << " " << r << "," << c;
          continue;
        }
        EXPECT_EQ(got, want) << lo << " " << r << "," << c;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << lo << " " << r << "," << c;
      }
  }
}

// The block form for narrow rows (a grouped conv's few channels per group) gives what the row
// loop gives: every step kind, with a per-column vector, a block-shaped operand and a scalar,
// 1 to 9 columns inside a wider row stride.
TEST(CpuEpilogue, ChainBlockMatchesTheRowLoop) {
  using K = dg::cpu::ChainStep;
  dg::cpu::Chain ch;
  ch.operand_instr = {1, 2, 3};  // only counted here: operand j is column, same-shaped, scalar
  ch.steps = {{K::MUL, 2}, {K::ADD, 0}, {K::SUB_FROM, 1}, {K::RELU, -1}, {K::SUB, 2}, {K::MUL, 0},
              {K::RELU, -1, -0.5f, 1.5f}};
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> u(-2, 2);
  constexpr int64_t kRows = 5, kLd = 12;
  for (int64_t cols = 1; cols <= 9; ++cols) {
    std::vector<float> column(static_cast<size_t>(cols)), same(kRows * kLd), block(kRows * kLd);
    for (auto& v : column) v = u(rng);
    for (auto& v : same) v = u(rng);
    for (auto& v : block) v = u(rng);
    const float scalars[3] = {0.0f, 0.0f, u(rng)};
    std::vector<float> want = block;
    for (int64_t i = 0; i < kRows; ++i) {
      const float* ptrs[3] = {column.data(), same.data() + i * kLd, nullptr};
      dg::cpu::run_chain(ch, cols, want.data() + i * kLd, ptrs, scalars, want.data() + i * kLd);
    }
    const float* col_ops[3] = {column.data(), nullptr, nullptr};
    const float* same_ops[3] = {nullptr, same.data(), nullptr};
    dg::cpu::run_chain_block(ch, kRows, cols, block.data(), kLd, col_ops, same_ops, scalars);
    for (size_t i = 0; i < block.size(); ++i) EXPECT_EQ(block[i], want[i]) << "cols " << cols << " at " << i;
  }
}

// The vectorized MAX / MIN / AMAX folds against a plain loop: lengths around the 16-wide body,
// infinities, and a NaN anywhere (which wins).
TEST(CpuEpilogue, ExtremeFoldsMatchAPlainLoop) {
  std::mt19937 rng(44);
  std::uniform_real_distribution<float> u(-3, 3);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(rng() % 70);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = u(rng);
    if (trial % 5 == 1) x[rng() % x.size()] = -INFINITY;
    if (trial % 5 == 2) x[rng() % x.size()] = std::nanf("");
    for (auto m : {dg::ReductionMode::MAX, dg::ReductionMode::MIN, dg::ReductionMode::AMAX}) {
      float want = m == dg::ReductionMode::MIN ? INFINITY : m == dg::ReductionMode::MAX ? -INFINITY : 0.0f;
      bool nan = false;
      for (float v : x) {
        const float t = m == dg::ReductionMode::AMAX ? std::fabs(v) : v;
        nan |= std::isnan(t);
        want = m == dg::ReductionMode::MIN ? std::min(want, t) : std::max(want, t);
      }
      float got = 0.0f;
      ASSERT_TRUE(dg::cpu::extreme_run(m, n, x.data(), got));
      if (nan) EXPECT_TRUE(std::isnan(got)) << "trial " << trial << " n " << n;
      else EXPECT_EQ(got, want) << "trial " << trial << " n " << n << " mode " << static_cast<int>(m);
    }
  }
  float unused = 0.0f;
  EXPECT_FALSE(dg::cpu::extreme_run(dg::ReductionMode::ADD, 4, nullptr, unused));
}

// Reductions over domain [4, 6] accumulated from two slots: AMAX to [1, 1], AVG over dim 0 to
// [1, 6], NORM2 over dim 1 to [4, 1].
TEST(CpuEpilogue, ReductionsCombineSlots) {
  dg::ir::Graph g;
  const int anchor = add_tensor(g, {4, 6}, {6, 1}, dg::DataType::FLOAT, true);
  const int amax = add_tensor(g, {1, 1}, {1, 1}, dg::DataType::FLOAT);
  const int avg = add_tensor(g, {1, 6}, {6, 1}, dg::DataType::DOUBLE);
  const int norm = add_tensor(g, {4, 1}, {1, 1}, dg::DataType::FLOAT);
  ex::Program p = anchored_program({4, 6}, anchor);
  for (auto [t, m] : {std::pair{amax, dg::ReductionMode::AMAX}, {avg, dg::ReductionMode::AVG}, {norm, dg::ReductionMode::NORM2}}) {
    auto r = instr(ex::InstrKind::REDUCE, -1, t, 0);
    r.reduce = m;
    p.code.push_back(r);
    p.reductions.push_back(t);
  }
  p.num_regs = 1;
  dg::cpu::Epilogue e;
  std::string why;
  ASSERT_TRUE(e.init(p, g, why)) << why;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2, 2);
  float x[24];
  for (auto& v : x) v = u(rng);
  float amax_v = NAN, norm_v[4] = {NAN, NAN, NAN, NAN};
  double avg_v[6];
  std::vector<void*> ptrs(g.tensors.size(), nullptr);
  ptrs[static_cast<size_t>(amax)] = &amax_v;
  ptrs[static_cast<size_t>(avg)] = avg_v;
  ptrs[static_cast<size_t>(norm)] = norm_v;
  dg::cpu::EpilogueRun run(e, ptrs, 3);
  for (int64_t r = 0; r < 4; ++r) {
    const int64_t c0[2] = {r, 0};
    run.strip(static_cast<int>(r % 3), c0, 1, 6, 1, x + r * 6);
  }
  ASSERT_TRUE(run.finish().ok());
  float want_amax = 0;
  for (float v : x) want_amax = std::max(want_amax, std::fabs(v));
  EXPECT_EQ(amax_v, want_amax);
  for (int c = 0; c < 6; ++c)
    EXPECT_NEAR(avg_v[c], (double(x[c]) + x[6 + c] + x[12 + c] + x[18 + c]) / 4.0, 1e-12);
  for (int r = 0; r < 4; ++r) {
    double s = 0;
    for (int c = 0; c < 6; ++c) s += double(x[r * 6 + c]) * x[r * 6 + c];
    EXPECT_NEAR(norm_v[r], std::sqrt(s), 1e-5);
  }
}

// Each mode's fp32 loop (or its double fallback) agrees with ref::pointwise_apply.
TEST(CpuEpilogue, EveryPointwiseModeMatchesRef) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-3, 3), pos(0.1f, 4);
  constexpr int n = 64;
  float a[n], b[n], c[n], out[n];
  for (const dg::PointwiseMode mode : test_modes::all_pointwise_modes()) {
    if (mode == dg::PointwiseMode::GEN_INDEX) continue;
    const bool positive = mode == dg::PointwiseMode::LOG || mode == dg::PointwiseMode::SQRT ||
                          mode == dg::PointwiseMode::RSQRT || mode == dg::PointwiseMode::POW;
    for (int i = 0; i < n; ++i) {
      a[i] = positive ? pos(rng) : u(rng);
      b[i] = (mode == dg::PointwiseMode::DIV || mode == dg::PointwiseMode::MOD) ? pos(rng) : u(rng);
      c[i] = i % 3 == 0 ? 0.0f : u(rng);
      if (i % 7 == 0) b[i] = a[i];  // ties for comparisons
    }
    dg::PointwiseAttr op;
    op.set_mode(mode).set_relu_lower_clip_slope(0.1).set_swish_beta(1.5).set_elu_alpha(0.7);
    dg::cpu::apply_pointwise(op, dg::DataType::FLOAT, n, a, b, c, out);
    for (int i = 0; i < n; ++i) {
      const double want = dg::ref::pointwise_apply(op, a[i], b[i], c[i]);
      EXPECT_NEAR(out[i], want, 2e-6 * std::max(1.0, std::fabs(want))) << dg::to_string(mode) << " at " << a[i] << ", " << b[i];
    }
  }
}

}  // namespace
