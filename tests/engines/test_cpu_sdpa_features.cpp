// sdpa's optional inputs on the CPU engines against ref: bias (broadcast forms), ALiBi, dropout
// (the same mask in both engines and in the backward), ragged Q/K/V/O and gradients, paged K and V
// (plain and packed tables), K and V of different head counts, head dims up to 520, and their
// combinations on seeded random shapes, outputs poisoned with NaN. Also ref's ragged and paged
// results against ref's dense ones on the same logical data, and the bad offsets and page-table
// entries that must fail with an execution error rather than read out of bounds.
#include <gtest/gtest.h>

#include <string>

#include "common/random_data.hpp"
#include "core/philox.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "sdpa_features_test_util.hpp"

namespace dg = dnngraph;

namespace {

using sdpa_features_test::BwdOut;
using sdpa_features_test::Data;
using sdpa_features_test::FCase;
using sdpa_features_test::FwdOut;
using sdpa_test::Mask;

double tolerance(dg::DataType t) { return t == dg::DataType::FLOAT ? 5e-5 : 2e-2; }

// The CPU engines' plans: the AVX2 kernels and the portable ones where the CPU has AVX2, else one.
int64_t kernel_builds() { return dg::cpu::sdpa::cpu_has_avx2_fma() ? 2 : 1; }

void check_forward(const FCase& c, uint32_t seed) {
  SCOPED_TRACE(c.describe());
  const Data d = sdpa_features_test::make_data(c, seed);
  const FwdOut want = sdpa_features_test::run_forward(c, d, "ref");
  for (int64_t plan = 0; plan < kernel_builds(); ++plan) {
    SCOPED_TRACE("plan " + std::to_string(plan));
    const FwdOut got = sdpa_features_test::run_forward(c, d, "cpu_sdpa_flash", true, plan);
    sdpa_features_test::expect_tensor_close(c, got.o, want.o, d.lo, d.seq_q, tolerance(c.type), "O");
    sdpa_features_test::expect_tensor_close(c, got.stats, want.stats, {c.h, c.sq, 1, {}}, {}, tolerance(c.type) * 2,
                                            "STATS");
    if (c.dropout)
      for (int64_t e = 0; e < want.dump.count(); ++e)
        if (got.dump.at(e) != want.dump.at(e)) {
          ADD_FAILURE() << "rng_dump element " << e << ": " << got.dump.at(e) << ", ref " << want.dump.at(e);
          break;
        }
  }
}

void check_backward(const FCase& c, uint32_t seed) {
  SCOPED_TRACE(c.describe());
  const Data d = sdpa_features_test::make_data(c, seed);
  const FwdOut fwd = sdpa_features_test::run_forward(c, d, "ref");
  sdpa_features_test::Buf d_o(c.type, fwd.o.count());
  std::mt19937 rng(seed + 1000);
  d_o.random(rng);
  const BwdOut want = sdpa_features_test::run_backward(c, d, fwd, d_o, "ref");
  for (int64_t plan = 0; plan < kernel_builds(); ++plan) {
    SCOPED_TRACE("plan " + std::to_string(plan));
    const BwdOut got = sdpa_features_test::run_backward(c, d, fwd, d_o, "cpu_sdpa_backward_flash", plan);
    sdpa_features_test::expect_grads_close(c, d, got, want, tolerance(c.type));
  }
}

// A random case: MHA/GQA/MQA with K and V heads drawn apart, lengths, head dims, a mask, then the
// features that `features` switches on (bias forms, ALiBi, dropout, padding, ragged).
FCase random_case(test_random::IntPicker& pick, int trial, bool ragged, bool bias, bool alibi, bool dropout) {
  FCase c;
  c.b = pick(1, 3);
  c.hk = pick(1, 2);
  c.hv = trial % 3 == 0 ? 3 - c.hk : c.hk;  // K and V heads differ in a third of the trials
  c.h = 2 * pick(1, 2) * (c.hk == c.hv ? c.hk : 1);
  c.sq = pick(1, 70);
  c.skv = pick(1, 90);
  const int64_t dims[] = {8, 13, 32, 56};
  c.d = dims[pick(0, 3)];
  c.dv = trial % 2 ? dims[pick(0, 3)] : c.d;
  c.type = trial % 4 == 3 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
  c.mask = static_cast<Mask>(trial % 5);
  c.left = pick(1, 20), c.right = pick(0, 10);
  c.padding = ragged || trial % 2 == 0;
  c.ragged = ragged;
  if (bias) c.bias_b = trial % 3 == 1 ? c.b : 1, c.bias_h = trial % 2 ? c.h : 1;
  c.alibi = alibi;
  c.dropout = dropout;
  return c;
}

struct Features {
  const char* name;
  bool ragged, bias, alibi, dropout;
};
const Features kFeatures[] = {{"bias", false, true, false, false},     {"alibi", false, false, true, false},
                              {"dropout", false, false, false, true},  {"ragged", true, false, false, false},
                              {"ragged_bias_dropout", true, true, false, true},
                              {"bias_alibi_dropout", false, true, true, true}};

}  // namespace

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32_10.
  using dg::philox::philox4x32_10;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, 0, 0), (dg::philox::Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, ~0u, ~0u),
            (dg::philox::Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0),
            (dg::philox::Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, DropoutMaskKeepsOneMinusP) {
  const dg::philox::DropoutMask mask(123456, 789, 0.1);
  std::vector<float> row(100000);
  mask.row(3, static_cast<int64_t>(row.size()), row.data(), 1.0f);
  double kept = 0;
  for (size_t i = 0; i < row.size(); ++i) {
    kept += row[i];
    if (i < 50) {
      EXPECT_EQ(row[i] != 0.0f, mask.keep(3 + i)) << i;  // row() and keep() agree
    }
  }
  EXPECT_NEAR(kept / static_cast<double>(row.size()), 0.9, 0.005);
}

TEST(Philox, VectorRowsMatchTheScalarOnes) {
  const auto builds = dg::cpu::sdpa::kernel_builds();  // the portable build first, then AVX2 / AVX-512
  if (builds.size() < 2) GTEST_SKIP() << "no AVX2";
  for (size_t bi = 1; bi < builds.size(); ++bi)
    for (double p : {0.0, 0.1, 0.5, 0.999}) {
      const dg::philox::DropoutMask mask(0x123456789abcdefull, 0xfedcba9876543210ull, p);
      for (uint64_t first : {uint64_t{0}, uint64_t{3}, uint64_t{1} << 34, (uint64_t{1} << 34) - 5}) {
        std::vector<float> want(203), got(203, -1.0f);
        mask.row(first, 203, want.data(), 2.5f);
        builds[bi]->dropout_row(mask, first, 203, got.data(), 2.5f);
        EXPECT_EQ(got, want) << builds[bi]->isa << " p " << p << " first " << first;
      }
    }
}

TEST(CpuSdpaFeatures, ForwardMatchesRef) {
  for (const Features& f : kFeatures) {
    SCOPED_TRACE(f.name);
    test_random::IntPicker pick(77);
    for (int trial = 0; trial < 8; ++trial)
      check_forward(random_case(pick, trial, f.ragged, f.bias, f.alibi, f.dropout), static_cast<uint32_t>(trial + 1));
  }
}

TEST(CpuSdpaFeatures, BackwardMatchesRef) {
  for (const Features& f : kFeatures) {
    SCOPED_TRACE(f.name);
    test_random::IntPicker pick(78);
    for (int trial = 0; trial < 6; ++trial)
      check_backward(random_case(pick, trial, f.ragged, f.bias, f.alibi, f.dropout), static_cast<uint32_t>(trial + 1));
  }
}

TEST(CpuSdpaFeatures, BiasWithCausalMasksAcrossTiles) {
  // Lengths past the engines' tiles (96 query rows, 64 keys forward; 48 backward), full-size bias.
  for (Mask m : {Mask::CAUSAL, Mask::CAUSAL_BOTTOM_RIGHT, Mask::SLIDING_WINDOW}) {
    FCase c;
    c.b = 2, c.h = 2, c.hk = c.hv = 2, c.sq = 130, c.skv = 150, c.d = c.dv = 16, c.mask = m, c.left = 40;
    c.bias_b = 2, c.bias_h = 2;
    check_forward(c, 5);
    check_backward(c, 6);
  }
}

TEST(CpuSdpaFeatures, PagedMatchesRef) {
  test_random::IntPicker pick(79);
  for (int trial = 0; trial < 8; ++trial) {
    FCase c = random_case(pick, trial, false, trial % 3 == 2, trial % 4 == 1, trial % 4 == 2);
    c.padding = c.paged = true;
    c.block = pick(1, 3) * 8;
    c.packed_tables = trial % 2 == 1;
    check_forward(c, static_cast<uint32_t>(trial + 1));
  }
}

TEST(CpuSdpaFeatures, LargeAndUnequalHeadDims) {
  // The frontend test's head dims past 128: both engines take any d and dv.
  const std::pair<int64_t, int64_t> dims[] = {{192, 128}, {200, 264}, {256, 256}, {520, 64}};
  for (auto [d, dv] : dims) {
    FCase c;
    c.h = 2, c.sq = 20, c.skv = 33, c.d = d, c.dv = dv, c.padding = true, c.bias_b = 1, c.bias_h = 2;
    check_forward(c, 3);
    check_backward(c, 4);
  }
}

// O = P~ V is linear in V, so <dV, V> = <dO, O> whenever the backward drops what the forward
// dropped: a check of the CPU backward's regenerated mask against the CPU forward's output.
TEST(CpuSdpaFeatures, DropoutBackwardRegeneratesTheForwardMask) {
  FCase c;
  c.b = 2, c.h = 3, c.hk = c.hv = 3, c.sq = 57, c.skv = 66, c.d = c.dv = 16, c.dropout = true, c.p = 0.3;
  c.padding = true;
  const Data d = sdpa_features_test::make_data(c, 11);
  const FwdOut fwd = sdpa_features_test::run_forward(c, d, "cpu_sdpa_flash");
  sdpa_features_test::Buf d_o(c.type, fwd.o.count());
  std::mt19937 rng(12);
  d_o.random(rng);
  const BwdOut g = sdpa_features_test::run_backward(c, d, fwd, d_o, "cpu_sdpa_backward_flash");
  double dv_v = 0, do_o = 0;
  for (int64_t e = 0; e < d.v.count(); ++e) dv_v += g.dv.at(e) * d.v.at(e);
  for (int64_t e = 0; e < fwd.o.count(); ++e) do_o += d_o.at(e) * fwd.o.at(e);
  EXPECT_NEAR(dv_v, do_o, 1e-4 * (1.0 + std::fabs(do_o)));
  // Another seed drops other elements: the identity then fails, so the check can fail.
  Data other = d;
  other.seed = {654321};
  const BwdOut g2 = sdpa_features_test::run_backward(c, other, fwd, d_o, "cpu_sdpa_backward_flash");
  double dv2_v = 0;
  for (int64_t e = 0; e < d.v.count(); ++e) dv2_v += g2.dv.at(e) * d.v.at(e);
  EXPECT_GT(std::fabs(dv2_v - do_o), 1e-2 * (1.0 + std::fabs(do_o)));
}

// Ragged and paged layouts hold the same logical rows as the dense one: ref gives the same O.
TEST(CpuSdpaFeatures, RaggedAndPagedMatchDenseOnTheSameRows) {
  for (const char* engine : {"ref", "cpu_sdpa_flash"}) {
    FCase dense;
    dense.b = 3, dense.h = 2, dense.sq = 9, dense.skv = 11, dense.padding = true, dense.mask = Mask::CAUSAL_BOTTOM_RIGHT;
    Data dd = sdpa_features_test::make_data(dense, 21);
    dd.seq_q = {9, 1, 4}, dd.seq_kv = {11, 3, 9};
    const FwdOut want = sdpa_features_test::run_forward(dense, dd, engine);
    FCase ragged = dense;
    ragged.ragged = true;
    Data rd = sdpa_features_test::make_data(ragged, 22);
    rd.seq_q = dd.seq_q, rd.seq_kv = dd.seq_kv;
    rd.lq.start = rd.lo.start = sdpa_features_test::prefix(rd.seq_q);
    rd.lk.start = rd.lv.start = sdpa_features_test::prefix(rd.seq_kv);
    for (size_t b = 0; b <= 3; ++b) {
      rd.q_off[b] = rd.lq.start[b] * 2 * 8, rd.o_off[b] = rd.lo.start[b] * 2 * 8;
      rd.k_off[b] = rd.lk.start[b] * 8, rd.v_off[b] = rd.lv.start[b] * 8;
    }
    auto copy_rows = [&](const sdpa_features_test::Buf& from, const sdpa_features_test::Layout& lf,
                         sdpa_features_test::Buf& to, const sdpa_features_test::Layout& lt,
                         const std::vector<int32_t>& lens) {
      for (int64_t b = 0; b < 3; ++b)
        for (int64_t h = 0; h < lf.heads; ++h)
          for (int64_t i = 0; i < lens[static_cast<size_t>(b)]; ++i)
            for (int64_t x = 0; x < lf.width; ++x) to.set(lt.row(b, h, i) + x, from.at(lf.row(b, h, i) + x));
    };
    copy_rows(dd.q, dd.lq, rd.q, rd.lq, rd.seq_q);
    copy_rows(dd.k, dd.lk, rd.k, rd.lk, rd.seq_kv);
    copy_rows(dd.v, dd.lv, rd.v, rd.lv, rd.seq_kv);
    const FwdOut got = sdpa_features_test::run_forward(ragged, rd, engine);
    int64_t bad = 0;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t i = 0; i < rd.seq_q[static_cast<size_t>(b)]; ++i)
          for (int64_t x = 0; x < 8; ++x)
            if (std::fabs(got.o.at(rd.lo.row(b, h, i) + x) - want.o.at(dd.lo.row(b, h, i) + x)) > 1e-6) ++bad;
    EXPECT_EQ(bad, 0) << engine << ": ragged O differs from dense O";
    // Paged K and V: page() copies dense data into shuffled blocks.
    FCase paged = dense;
    paged.paged = true;
    paged.block = 4;
    Data pd = dd;
    pd.pages = 3, pd.blocks = 3 * 3 + 1;
    std::mt19937 rng(5);
    sdpa_features_test::Buf kc, vc;
    sdpa_features_test::page(paged, dd.k, dd.lk, pd, kc, pd.k_table, rng);
    sdpa_features_test::page(paged, dd.v, dd.lv, pd, vc, pd.v_table, rng);
    pd.k = kc, pd.v = vc;
    const FwdOut got_paged = sdpa_features_test::run_forward(paged, pd, engine);
    sdpa_features_test::expect_tensor_close(dense, got_paged.o, want.o, dd.lo, dd.seq_q, 1e-6, "paged O");
  }
}

TEST(CpuSdpaFeatures, BadRaggedOffsetsAndPageEntriesFailAtExecution) {
  for (const char* engine : {"ref", "cpu_sdpa_flash"}) {
    FCase c;
    c.b = 2, c.ragged = true, c.padding = true;
    Data d = sdpa_features_test::make_data(c, 31);
    d.k_off[1] = d.k.count();  // batch 1's keys would start past K's last element
    const FwdOut out = sdpa_features_test::run_forward(c, d, engine, false);
    EXPECT_EQ(out.status.code(), dg::ErrorCode::GRAPH_EXECUTION_FAILED) << engine;
    EXPECT_NE(out.status.message().find("tensor 'K': ragged offset " + std::to_string(d.k.count()) + " of batch 1"),
              std::string::npos)
        << out.status.message();
    FCase p;
    p.b = 2, p.paged = true, p.padding = true, p.block = 4;
    Data pd = sdpa_features_test::make_data(p, 32);
    pd.seq_kv = {7, 7};
    pd.v_table[1] = static_cast<int32_t>(pd.blocks);  // one past the container's blocks
    const FwdOut pout = sdpa_features_test::run_forward(p, pd, engine, false);
    EXPECT_EQ(pout.status.code(), dg::ErrorCode::GRAPH_EXECUTION_FAILED) << engine;
    EXPECT_NE(pout.status.message().find("tensor 'V_TABLE': page 1 of batch 0 names block " +
                                         std::to_string(pd.blocks)),
              std::string::npos)
        << pout.status.message();
  }
}

// The own CUDA engines name each feature they lack (ref and the CPU engines serve those graphs);
// their descriptions run before the device check, so a CPU handle shows them.
TEST(CpuSdpaFeatures, CudaEnginesRefuseWhatTheyLackWithAReason) {
  FCase c;
  c.padding = c.ragged = c.alibi = c.dropout = true;
  c.bias_b = 1, c.bias_h = 1;
  const Data d = sdpa_features_test::make_data(c, 41);
  for (const char* engine : {"cuda_sdpa_flash", "cuda_sdpa_backward_flash"}) {
    dg::Handle handle(dg::Device::cpu());
    dg::Graph g;
    g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({engine});
    const bool forward = std::string(engine) == "cuda_sdpa_flash";
    dg::SdpaAttr fa;
    dg::SdpaBackwardAttr ba;
    const sdpa_features_test::Common t =
        forward ? sdpa_features_test::declare_common(g, c, d, fa) : sdpa_features_test::declare_common(g, c, d, ba);
    if (forward) {
      g.sdpa(t.Q, t.K, t.V, fa)[0]->set_output(true).set_ragged_offset(t.OR);
    } else {
      auto ST = sdpa_features_test::tensor(g, "ST", {c.b, c.h, c.sq, 1}, {c.h * c.sq, c.sq, 1, 1}, dg::DataType::FLOAT);
      for (auto& out : g.sdpa_backward(t.Q, t.K, t.V, t.Q, t.Q, ST, ba)) out->set_output(true);
    }
    ASSERT_TRUE(g.validate().ok());
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    EXPECT_FALSE(g.check_support(handle).ok());
    EXPECT_NE(g.explain().find("node 'attn': a bias, ALiBi, dropout, ragged offsets (not implemented in this engine"),
              std::string::npos)
        << g.explain();
  }
}
