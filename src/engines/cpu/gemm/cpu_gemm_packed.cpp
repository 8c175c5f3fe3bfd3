// cpu_gemm_packed: C[..., M, N] = A[..., M, K] x B[..., K, N] with broadcast batch dims, any
// strides (packing handles transposes), FLOAT/BFLOAT16/HALF inputs converted while packing, fp32
// accumulation, and the partition's epilogue applied to each C block while it is in cache.
#include "engines/cpu/gemm/cpu_gemm_packed.hpp"

#include <algorithm>

#include "engines/cpu/anchor_check.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/gemm/gemm_plan.hpp"
#include "engines/cpu/gemm/pack.hpp"
#include "engines/cpu/gemm/pack_bf16.hpp"

namespace dnngraph::cpu {
namespace {

// Shapes and strides of one matmul, resolved from the IR at build time.
struct MatmulGeometry {
  int a = -1, b = -1, c = -1;  // tensor ids
  int64_t M = 0, N = 0, K = 0, batch = 1;
  std::vector<int64_t> batch_dims;              // C's
  std::vector<int64_t> a_bs, b_bs, c_bs;        // batch strides (0 where broadcast)
  gemm::StridedMatrix a_mat, b_mat;             // data filled in per execute
  int64_t c_rs = 0, c_cs = 0;
  DataType c_dtype = DataType::FLOAT;
  bool b_broadcast = true;                      // one B for every batch

  void init(const ir::Graph& g, const ir::Node& n) {
    a = n.inputs[0];
    b = n.inputs[1];
    c = n.outputs[0];
    const ir::Tensor &ta = g.tensor(a), &tb = g.tensor(b), &tc = g.tensor(c);
    const size_t r = tc.dims.size();
    M = tc.dims[r - 2];
    N = tc.dims[r - 1];
    K = ta.dims[r - 1];
    batch_dims.assign(tc.dims.begin(), tc.dims.end() - 2);
    for (size_t i = 0; i + 2 < r; ++i) {
      batch *= tc.dims[i];
      a_bs.push_back(ta.dims[i] == 1 ? 0 : ta.strides[i]);
      b_bs.push_back(tb.dims[i] == 1 ? 0 : tb.strides[i]);
      c_bs.push_back(tc.dims[i] == 1 ? 0 : tc.strides[i]);
      if (tb.dims[i] != 1) b_broadcast = false;
    }
    a_mat = {nullptr, ta.dtype, ta.strides[r - 2], ta.strides[r - 1]};
    b_mat = {nullptr, tb.dtype, tb.strides[r - 2], tb.strides[r - 1]};
    c_rs = tc.strides[r - 2];
    c_cs = tc.strides[r - 1];
    c_dtype = tc.dtype;
  }
  int64_t offset(const std::vector<int64_t>& bs, int64_t bi) const {
    int64_t off = 0;
    for (size_t i = batch_dims.size(); i-- > 0;) {
      off += (bi % batch_dims[i]) * bs[i];
      bi /= batch_dims[i];
    }
    return off;
  }
};

class MatmulProblem final : public gemm::GemmProblem {
 public:
  // `pairs`: for the bf16-pair kernels, K counts pairs of k and A and B are packed as pairs;
  // `amx` too, with A in row-major tiles and K padded to whole 16-pair tile steps.
  MatmulProblem(const MatmulGeometry& g, const Epilogue& epi, const std::vector<void*>* ptrs, EpilogueRun* run,
                int nr, bool pairs, bool amx)
      : g_(g), run_(run), pairs_(pairs || amx), amx_(amx) {
    batch = g.batch;
    M = g.M;
    N = g.N;
    K = amx ? (g.K + 31) / 32 * 16 : pairs ? (g.K + 1) / 2 : g.K;
    a_ = g.a_mat;
    b_ = g.b_mat;
    if (ptrs) {
      a_.data = (*ptrs)[static_cast<size_t>(g.a)];
      b_.data = (*ptrs)[static_cast<size_t>(g.b)];
      c_data_ = static_cast<float*>((*ptrs)[static_cast<size_t>(g.c)]);
    }
    // Reading A in place skips packing; worth it when B is so narrow that packing A would cost
    // as much as the multiply. Otherwise packed blocks also dodge cache-set conflicts of
    // power-of-two row strides.
    a_direct_ = !pairs && a_.dtype == DataType::FLOAT && a_.cs == 1 && N <= 2 * nr;
    c_direct_ = epi.plain_fp32_store() == g.c && g.c_cs == 1;
    out_rs_ = g.c_rs;
    out_bs_ = g.c_bs;
    if (const auto* st = !c_direct_ && epi.rows_form() && ptrs ? &epi.chain_store_strides() : nullptr;
        st && st->back() == 1) {
      out_rs_ = (*st)[st->size() - 2];
      out_bs_.assign(st->begin(), st->end() - 2);
      if (epi.in_place() && run->in_place_safe()) {
        // An fp32 chain: the tiles go straight to its output, finished block by block.
        c_direct_ = chain_ = true;
        c_data_ = static_cast<float*>((*ptrs)[static_cast<size_t>(epi.chain_store())]);
      } else {
        rows_out_ = true;  // a chain into a bf16 / fp16 output (or over one): c_block hands it whole blocks
      }
    }
  }

  void a_rows(int64_t b, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr, const float** rows,
              float* scratch) const override {
    const int64_t tiles = (mc + mr - 1) / mr;
    const int64_t kc = kb.kc();
    if (a_direct_) {
      const float* base = static_cast<const float*>(a_.data) + g_.offset(g_.a_bs, b) + kb.k0;
      for (int64_t i = 0; i < tiles * mr; ++i) rows[i] = base + (m0 + std::min(i, mc - 1)) * a_.rs;
      return;
    }
    gemm::StridedMatrix a = a_;
    a.data = static_cast<const char*>(a_.data) + g_.offset(g_.a_bs, b) * size_of(a_.dtype);
    if (amx_) {
      amx_rows(a, m0, mc, kb, mr, rows, scratch);
      return;
    }
    if (pairs_) gemm::pack_a_bf16_pairs(a, m0, mc, kb.k0, kc, g_.K, mr, scratch);
    else gemm::pack_a_panels(a, m0, mc, kb.k0, kc, mr, scratch);
    for (int64_t i = 0; i < tiles * mr; ++i) rows[i] = scratch + (i / mr) * kc * mr;
  }
  int64_t a_scratch_floats(int64_t mc, int64_t kc) const override { return a_direct_ ? 0 : (mc + 32) * kc; }

  // AMX: each row by its own pointer (the kernel takes a 16-row half's spacing from its first two).
  // A half of 16 rows of bf16 A, k contiguous, whose block of pairs lies inside K is read in place
  // (the tile load strides over A's rows) unless A's row stride is a multiple of 1 KB: then the 16
  // rows fall in 4 or fewer of L1's 64 sets (x86's L1d indexes 64 sets of 64-byte lines), and the
  // conflict misses cost more than packing saved (perf on an AMX Xeon: 1024^3 and 2048^3 ran their
  // kernel 8% and 33% longer in place; 768 x 3072 x 768, 1.5 KB rows, 1.07x faster in place).
  // Other halves are packed (pairs past K, rows past mc: zero).
  void amx_rows(const gemm::StridedMatrix& a, int64_t m0, int64_t mc, const gemm::KBlock& kb, int mr,
                const float** rows, float* scratch) const {
    constexpr int kHalf = 16;
    const int64_t kc = kb.kc(), padded = (mc + mr - 1) / mr * mr;
    const bool in_place = a.dtype == DataType::BFLOAT16 && a.cs == 1 && 2 * (kb.k0 + kc) <= g_.K &&
                          a.rs * 2 % 1024 != 0;
    const auto* src = static_cast<const uint16_t*>(a.data);
    for (int64_t h0 = 0; h0 < padded; h0 += kHalf) {
      if (in_place && h0 + kHalf <= mc) {
        for (int r = 0; r < kHalf; ++r)
          rows[h0 + r] = reinterpret_cast<const float*>(src + (m0 + h0 + r) * a.rs + 2 * kb.k0);
        continue;
      }
      float* dst = scratch + (h0 / mr) * kc * mr + (h0 % mr) * kc;
      if (h0 < mc) gemm::pack_a_bf16_rows(a, m0 + h0, std::min<int64_t>(kHalf, mc - h0), kb.k0, kc, g_.K, kHalf, dst);
      else std::fill_n(dst, kHalf * kc, 0.0f);  // a half wholly past mc
      for (int r = 0; r < kHalf; ++r) rows[h0 + r] = dst + r * kc;
    }
  }
  // AMX steps 16 pairs at a time: blocks of whole steps (K is padded to them).
  std::vector<gemm::KBlock> k_blocks(int64_t kc) const override {
    if (!amx_) return GemmProblem::k_blocks(kc);
    std::vector<gemm::KBlock> out;
    const int64_t n = (K + kc - 1) / kc, step = ((K + n - 1) / n + 15) / 16 * 16;
    for (int64_t k0 = 0; k0 < K; k0 += step) out.push_back(gemm::KBlock{k0, 1, std::min(step, K - k0)});
    return out;
  }
  bool a_kmajor() const override { return !a_direct_; }

  int64_t b_count() const override { return g_.b_broadcast ? 1 : batch; }
  int64_t b_index(int64_t b) const override { return g_.b_broadcast ? 0 : b; }
  void pack_b(int64_t d, int64_t n0, int64_t nc, int nr, float* dst) const override {
    gemm::StridedMatrix bm = b_;
    bm.data = static_cast<const char*>(b_.data) + g_.offset(g_.b_bs, d) * size_of(b_.dtype);
    if (pairs_) gemm::pack_b_bf16_pairs(bm, g_.K, n0, nc, nr, K, dst);
    else gemm::pack_panels(bm, K, n0, nc, nr, dst);
  }

  float* c_direct(int64_t b, int64_t m0, int64_t n0, int64_t& ldc) const override {
    if (!c_direct_) return nullptr;
    ldc = out_rs_;
    return c_data_ + g_.offset(out_bs_, b) + m0 * out_rs_ + n0;
  }
  void c_direct_done(int64_t b, int64_t m0, int64_t mc, int64_t n0, int64_t nc, float* c, int64_t ldc) const override {
    if (chain_) run_->chain_rows(c, ldc, mc, nc, g_.offset(out_bs_, b) + m0 * out_rs_ + n0, n0);
  }
  bool chains_tiles() const override { return chain_; }
  void tile_chain(int64_t b, int64_t m0, int64_t n0, TileChain& tc) const override {
    run_->tile_chain(g_.offset(out_bs_, b) + m0 * out_rs_ + n0, n0, out_rs_, tc);
  }
  void c_block(int slot, int64_t b, int64_t m0, int64_t mc, int64_t n0, int64_t nc, const float* c,
               int64_t ldc) const override {
    if (rows_out_) {
      run_->chain_rows_into(slot, c, ldc, mc, nc, g_.offset(out_bs_, b) + m0 * out_rs_ + n0, out_rs_, n0);
      return;
    }
    int64_t coord[16];
    const size_t nb = g_.batch_dims.size();
    int64_t rest = b;
    for (size_t i = nb; i-- > 0;) {
      coord[i] = rest % g_.batch_dims[i];
      rest /= g_.batch_dims[i];
    }
    for (int64_t i = 0; i < mc; ++i) {
      coord[nb] = m0 + i;
      coord[nb + 1] = n0;
      run_->strip(slot, coord, static_cast<int>(nb + 1), nc, 1, c + i * ldc);
    }
  }

 private:
  const MatmulGeometry& g_;
  EpilogueRun* run_;
  gemm::StridedMatrix a_, b_;
  float* c_data_ = nullptr;
  bool pairs_, amx_;
  bool a_direct_ = false, c_direct_ = false, chain_ = false;
  bool rows_out_ = false;  // c_block hands its rows to the chain (EpilogueRun::chain_rows_into)
  int64_t out_rs_ = 0;
  std::vector<int64_t> out_bs_;  // the output's batch strides
};

class MatmulPlan final : public gemm::GemmPlan {
 public:
  // The epilogue runs in place along N, the last dim of the output.
  MatmulPlan(const Partition& p, const Epilogue& epi, const GemmSetting& s, int threads)
      : GemmPlan(p, epi, epi.rank() - 1, s, threads, tile_kernels(p, s.isa)) {
    geo_.init(*p.graph, p.graph->nodes[static_cast<size_t>(p.anchor)]);
    amx_ = &kernels() == gemm::amx_bf16_kernels();
    pairs_ = &kernels() == gemm::avx512_bf16_kernels();
    if (amx_) {
      // AMX's tile steps are cheap next to a C block's tile loads and stores: K blocks (in pairs)
      // grow until a block of at most 192 rows of A fills half of L2 (1024^3 single-thread: 376
      // GFLOP/s per CPU second at kc 192, 598 at 768; 2048^3: mc 192 566, mc 480 451).
      gemm::Blocking b = blocking();
      b.mc = std::min<int64_t>(b.mc, 192);
      b.kc = std::max<int64_t>(b.kc, cpu_features().l2_bytes / 2 / (b.mc * 4) / 16 * 16);
      set_blocking(b);
    }
    keep_b_if_constant(geo_.b);
    reserve_workspace(problem(nullptr, nullptr));
  }
  // Where A and B are bf16 and the knobs' ISA is AVX-512: the AMX kernel where the CPU has it,
  // else the bf16-pair kernels where this CPU runs them faster than the fp32 ones; else null
  // (the fp32 kernels, bf16 converted while packing).
  static const gemm::KernelSet* bf16_pair_kernels(const Partition& p, Isa isa) {
    const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
    const bool bf16 = p.tensor(n.inputs[0]).dtype == DataType::BFLOAT16 && p.tensor(n.inputs[1]).dtype == DataType::BFLOAT16;
    if (!bf16 || isa != Isa::AVX512) return nullptr;
    if (const gemm::KernelSet* amx = gemm::amx_bf16_kernels()) return amx;
    return gemm::bf16_pairs_faster() ? gemm::avx512_bf16_kernels() : nullptr;
  }
  // The bf16-pair or AMX kernels (above); else for one row of A (M = 1: a classifier's matrix-vector
  // product) the one-row kernels, which the 12-row tile would compute 12 times (ResNet-50's 1 x 2048
  // x 1000 head 0.26 -> ~0.1 ms on a 2-core AVX-512 Xeon); else null (kernel_set).
  static const gemm::KernelSet* tile_kernels(const Partition& p, Isa isa) {
    if (const gemm::KernelSet* pairs = bf16_pair_kernels(p, isa)) return pairs;
    const ir::Tensor& c = p.tensor(p.graph->nodes[static_cast<size_t>(p.anchor)].outputs[0]);
    return c.dims[c.dims.size() - 2] == 1 ? &gemm::row_kernel_set(isa) : nullptr;
  }
  MatmulProblem problem(const std::vector<void*>* ptrs, EpilogueRun* run) const {
    return MatmulProblem(geo_, epilogue(), ptrs, run, kernels().nr, pairs_, amx_);
  }

  Status execute(const ExecArgs& args) const override {
    ThreadPool& pool = args.handle.thread_pool();
    EpilogueRun run(epilogue(), args.ptrs, pool.size());
    if (auto s = run_problem(problem(&args.ptrs, &run), pool, args.workspace,
                                args.ptrs);
        !s.ok())
      return s;
    return run.finish();
  }

 private:
  MatmulGeometry geo_;
  bool pairs_ = false, amx_ = false;  // on the bf16-pair or the AMX kernels
};

class GemmPackedEngine final : public gemm::GemmEngine<MatmulPlan> {
 public:
  GemmPackedEngine() : GemmEngine("cpu_gemm_packed") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    // Packing and the epilogue pass add a memory term on top of the FMA roofline.
    // AMX-BF16 tiles: ~3x the fp32 kernel's rate (bf16 2048^3 at 1.4x oneDNN's, fp32 at 0.9x).
    const double amx = MatmulPlan::bf16_pair_kernels(p, isa_of(k)) == gemm::amx_bf16_kernels() &&
                               gemm::amx_bf16_kernels() ? 3.0 : 1.0;
    return roofline_seconds(partition_flops(p), 2.0 * partition_bytes(p), t.info(),
                            gemm::kernel_efficiency(isa_of(k)) * amx, 5e-6);
  }

 private:
  bool accepts(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const override {
    return check_anchor(p, t, "matmul", epi, why) != nullptr;
  }
  gemm::Blocking blocking(const Partition& p, Isa isa) const override {
    const gemm::KernelSet& ks = gemm::kernel_set(isa);
    MatmulGeometry g;
    g.init(*p.graph, p.graph->nodes[static_cast<size_t>(p.anchor)]);
    // The bf16-pair kernels block K (in pairs) as the fp32 ones: 2048^3 on Zen 4 ran 350 GFLOP/s
    // at the L1-sized kc of 168 pairs, 380-408 at 512-1024 (B panels streamed from L2).
    if (const gemm::KernelSet* tiles = MatmulPlan::tile_kernels(p, isa))
      return tiles == gemm::avx512_bf16_kernels() ? gemm::matmul_blocking(*tiles, (g.K + 1) / 2)
                                                  : gemm::default_blocking(ks);  // AMX, one row
    return gemm::matmul_blocking(ks, g.K);
  }
  gemm::PackedB packed_b(const Partition& p) const override {
    MatmulGeometry g;
    g.init(*p.graph, p.graph->nodes[static_cast<size_t>(p.anchor)]);
    return {g.b_broadcast ? 1 : g.batch, g.N, g.K};
  }
};

}  // namespace

const Engine& gemm_packed_engine() { return engine_instance<GemmPackedEngine>(); }

}  // namespace dnngraph::cpu
