#include "engines/cpu/gemm/driver.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/checked.hpp"
#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::gemm {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }
constexpr int64_t kAlignFloats = 16;  // 64 bytes
// 64 KiB: a B block small enough that walking all its panels per A tile beats keeping one panel
// in L1 (1x1 C256 -> 64, 64 KiB: 0.66-0.88 against 0.71-0.90 ms; 3x3 C256 14x14, 128 KiB: 2.28-2.49
// against 1.86-2.15 ms the other way).
constexpr int64_t kSmallBFloats = 1 << 14;
// The largest slice of the next B panel prefetched per tile (16 lines).
constexpr int64_t kMaxSliceBytes = 1024;
// Row stride of a C buffer: a cache line past the panels, so rows do not share cache sets.
int64_t buffer_ld(int64_t nc, int64_t nr) { return round_up(nc, nr) + 16; }

// How the work is cut into tasks, and the scratch each thread needs for one. M is cut into
// m_tasks ranges of whole micro-tiles that differ by at most one tile, so tasks are balanced.
struct TaskShape {
  int64_t mt = 0, nt = 0;          // most rows and columns per task
  int64_t m_tasks = 0, n_tasks = 0;
  int64_t tiles = 0;               // micro-tile rows of M
  std::vector<KBlock> kblocks;
  int max_nseg = 1;
  int64_t max_kc = 0;
  // Per-thread scratch, in floats, each region 64-byte aligned.
  int64_t a_floats = 0, b_floats = 0, c_floats = 0, rows_ptrs = 0, edge_floats = 0;
  int64_t per_thread() const {
    return round_up(a_floats, kAlignFloats) + round_up(b_floats, kAlignFloats) + round_up(c_floats, kAlignFloats) +
           round_up(rows_ptrs * 2, kAlignFloats) + round_up(edge_floats, kAlignFloats) + kAlignFloats;
  }
  int64_t shared_b = 0;  // floats of pre-packed B
  // Column shares (few rows, one row range): thread h's home tasks are `share_tasks` runs of its
  // `share_panels` whole panels, then its part of each of the `tail_panels` panels left over,
  // whose rows are split among the threads. 0: the m_tasks x n_tasks grid.
  int64_t share_panels = 0, share_tasks = 0, tail_panels = 0;
  // Unit shares (gathered rows, one task a thread): thread h takes the h-th of `threads` equal
  // weights of the (row tile, panel) grid walked row by row, each unit weighed by the rows its
  // kernel computes (a short last tile that the half kernel runs: half), as up to three tasks:
  // the end of one row tile's panels, whole row tiles, the start of another's.
  bool unit_shares = false;
  int64_t last_tile_weight = 0;
  int threads = 1;
  int64_t per_batch() const {
    if (unit_shares) return 3 * int64_t{threads};
    return share_tasks ? threads * (share_tasks + tail_panels) : m_tasks * n_tasks;
  }
  int64_t task_count(int64_t batch) const { return batch * per_batch(); }
  int64_t m_begin(int64_t mi, int mr) const { return mi * tiles / m_tasks * mr; }
};

// Rows [ma, me) and columns [n0, n0 + nc) of batch b: one task's block of C.
struct TaskBlock {
  int64_t b = 0, ma = 0, me = 0, n0 = 0, nc = 0;
};

// The unit at the k-th of t.threads equal weights of the (row tile, panel) grid, rounded to the
// nearest panel: row tile r, panel p (t.tiles, 0 past the end).
void share_boundary(const TaskShape& t, int64_t panels, int64_t mr, int64_t k, int64_t& r, int64_t& p) {
  r = t.tiles;
  p = 0;
  if (k >= t.threads) return;
  const int64_t tile = mr * panels, whole = (t.tiles - 1) * tile;  // weights of a row tile, the whole ones
  const int64_t target = k * (whole + t.last_tile_weight * panels) / t.threads;
  r = target < whole ? target / tile : t.tiles - 1;
  const int64_t w = target < whole ? mr : t.last_tile_weight;
  p = (target - r * tile + w / 2) / w;
  if (p >= panels) {
    ++r;
    p = 0;
  }
}

// Part `part` (0..2) of thread h's unit share; an empty block where the share has no such part.
TaskBlock unit_share_block(const TaskShape& t, const GemmProblem& p, int mr, int nr, int64_t h, int64_t part) {
  const int64_t panels = ceil_div(std::max<int64_t>(p.N, 1), nr);
  int64_t r0 = 0, p0 = 0, r1 = 0, p1 = 0;
  share_boundary(t, panels, mr, h, r0, p0);
  share_boundary(t, panels, mr, h + 1, r1, p1);
  int64_t ra = 0, rb = 0, pa = 0, pb = 0;  // row tiles [ra, rb), panels [pa, pb)
  if (r0 == r1) {
    if (part == 0) ra = r0, rb = r0 + 1, pa = p0, pb = p1;
  } else if (part == 0) {
    if (p0 > 0) ra = r0, rb = r0 + 1, pa = p0, pb = panels;
  } else if (part == 1) {
    ra = p0 > 0 ? r0 + 1 : r0, rb = r1, pa = 0, pb = panels;
  } else if (p1 > 0) {
    ra = r1, rb = r1 + 1, pa = 0, pb = p1;
  }
  TaskBlock out;
  if (ra >= rb || pa >= pb) return out;
  out.ma = ra * mr;
  out.me = std::min(p.M, rb * mr);
  out.n0 = pa * nr;
  out.nc = std::min(pb * nr, p.N) - out.n0;
  return out;
}

TaskBlock task_block(const TaskShape& t, const GemmProblem& p, int mr, int nr, int64_t i) {
  const int64_t local = i % t.per_batch();
  if (t.unit_shares) {
    TaskBlock out = unit_share_block(t, p, mr, nr, local / 3, local % 3);
    out.b = i / t.per_batch();
    return out;
  }
  TaskBlock out;
  out.b = i / t.per_batch();
  if (!t.share_tasks) {
    const int64_t mi = local / t.n_tasks, ni = local % t.n_tasks;
    out.ma = t.m_begin(mi, mr);
    out.me = std::min(p.M, t.m_begin(mi + 1, mr));
    out.n0 = ni * t.nt;
    out.nc = std::min(t.nt, p.N - out.n0);
    return out;
  }
  const int64_t per_thread = t.share_tasks + t.tail_panels, h = local / per_thread, j = local % per_thread;
  int64_t p0 = 0, p1 = 0;  // panels
  if (j < t.share_tasks) {
    p0 = h * t.share_panels + j * t.share_panels / t.share_tasks;
    p1 = h * t.share_panels + (j + 1) * t.share_panels / t.share_tasks;
    out.ma = 0;
    out.me = p.M;
  } else {
    p0 = t.threads * t.share_panels + (j - t.share_tasks);
    p1 = p0 + 1;
    out.ma = h * t.tiles / t.threads * mr;
    out.me = std::min(p.M, (h + 1) * t.tiles / t.threads * mr);
  }
  out.n0 = p0 * nr;
  out.nc = std::min(p1 * nr, p.N) - out.n0;
  return out;
}

bool shared_b_floats(const GemmProblem& p, int64_t nr, int64_t& out) {
  out = 0;
  return !p.b_shared() || packed_b_floats(p.b_count(), p.N, p.K, nr, out);
}

TaskShape plan_tasks(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, int threads) {
  TaskShape t;
  const int64_t mr = ks.mr, nr = ks.nr, th = std::max(threads, 1);
  const int64_t mc = std::max<int64_t>(mr, blk.mc / mr * mr);
  const int64_t want = 3 * th;
  t.tiles = ceil_div(std::max<int64_t>(p.M, 1), mr);
  t.nt = std::max<int64_t>(nr, std::min(round_up(std::max<int64_t>(p.N, 1), nr), blk.nc / nr * nr));
  t.m_tasks = ceil_div(std::max<int64_t>(p.M, 1), mc);
  if (!p.b_shared()) {
    // B is packed per task: give each task all rows it can take, so B is gathered once.
    t.m_tasks = 1;
    while (p.batch * t.m_tasks * ceil_div(p.N, t.nt) < want && t.nt > 2 * nr) t.nt = round_up(t.nt / 2, nr);
  }
  // Enough tasks for every thread: split N finer before M (rows below mc only thin the A block),
  // down to single panels where M has fewer tiles than eight per thread or no more rows than B has
  // columns: each M task streams all of B once more, which at 7x7 x 512 (9.4 MB of weights, 7
  // tiles) bound the layer by L3, and at 14x14 x 256 (2.4 MB of weights, 196 rows) by L2.
  int64_t min_nt = t.tiles < 8 * th || p.M <= p.N ? nr : 4 * nr;
  // Unless A's rows are gathered per task (an AMX conv's 16-row halves that cross output rows):
  // then each N task would gather all of A again, so M is split first (bf16 3x3 C256 14x14 on
  // AMX: 0.18-0.21 -> 0.13-0.15 ms; C512 7x7 0.20-0.25 -> 0.18-0.21; alternated, 2026-12-06).
  if (p.a_gathered() && t.tiles >= th) min_nt = round_up(std::max<int64_t>(p.N, 1), nr);
  // Where the gathered rows fit one row block per thread, every extra task streams all of B once
  // more: one task per thread then, by columns where B has twice A's rows or more (each thread
  // gathers all of A, and B is read once), else by rows. bf16 C512 7x7 on AMX 0.196-0.207 ->
  // 0.172-0.173 ms, C512 4x4 0.106-0.113 -> 0.093-0.094 (alternated, 2026-12-07).
  const bool one_task_a_thread = p.a_gathered() && p.b_shared() && p.batch == 1 && th > 1 && p.M <= th * mc;
  const bool gathered_column_shares = one_task_a_thread && p.N >= 2 * p.M && ceil_div(p.N, nr) >= th;
  // A packed per task in k-major panels (a matmul's A) is packed again by every N task of a row
  // range: where the rows split into one range per thread of at most mc rows, each thread takes
  // its range with all of N (B is read once per range either way). An encoder's 512 x 768 x 768
  // and 512 x 3072 x 768 alone: 4-8% faster (docs/perf.md, 2026-12-06).
  const bool ranges_per_thread =
      p.a_kmajor() && p.b_shared() && p.batch == 1 && th > 1 && t.tiles >= 8 * th && p.M <= th * mc;
  // Otherwise by rows, in unit shares: whole row tiles a thread left one thread a tile more, or
  // the short last tile (bf16 3x3 C256 14x14 on AMX: 196 rows, 3 tiles against 3 and a half).
  t.unit_shares = one_task_a_thread && !gathered_column_shares && t.tiles >= th;
  if (gathered_column_shares) t.nt = round_up(std::max<int64_t>(p.N, 1), nr);  // one row range; shares below
  if (ranges_per_thread || t.unit_shares) {
    t.m_tasks = th;
    t.nt = round_up(std::max<int64_t>(p.N, 1), nr);
  }
  if (t.unit_shares) {
    t.threads = static_cast<int>(th);
    const int64_t last_rows = p.M - (t.tiles - 1) * mr;
    t.last_tile_weight = ks.kernel_half && last_rows <= mr / 2 ? mr / 2 : mr;
  }
  const bool fixed = ranges_per_thread || gathered_column_shares || t.unit_shares;
  while (!fixed && p.batch * t.m_tasks * ceil_div(p.N, t.nt) < want && t.nt > min_nt) t.nt = round_up(t.nt / 2, nr);
  t.n_tasks = ceil_div(std::max<int64_t>(p.N, 1), t.nt);
  while (!fixed && p.batch * t.m_tasks * t.n_tasks < want && t.m_tasks < t.tiles) ++t.m_tasks;
  // A task count that is a multiple of the threads, while tasks keep a few tiles each.
  while (!fixed && t.task_count(p.batch) % th != 0 && t.m_tasks < t.tiles / 4) ++t.m_tasks;
  // One row range, so the columns alone balance the threads, and whole panels rarely divide
  // evenly (3x3 C512 7x7: 11 panels of 48 for 2 threads; 6 tasks of 2 panels left one thread 64
  // columns short, idle for 16% of the layer): each thread takes an equal share of whole panels,
  // and the panels left over are split by rows among all threads.
  const int64_t panels = ceil_div(std::max<int64_t>(p.N, 1), nr), grid_tasks = t.m_tasks * t.n_tasks;
  if (gathered_column_shares || (t.m_tasks == 1 && th > 1 && p.b_shared() && !p.a_gathered() && panels >= th &&
                                 t.tiles >= th)) {
    t.threads = static_cast<int>(th);
    t.share_panels = panels / th;
    t.tail_panels = panels % th;
    // A packed per task (k-major panels) is packed again by each of a thread's tasks: one task per
    // share then (an encoder's FFN, 128 x 768 x 3072: three packs of A per thread were 10% of it).
    t.share_tasks = p.a_kmajor() ? 1 : std::min<int64_t>(t.share_panels, ceil_div(grid_tasks, th));
    t.nt = ceil_div(t.share_panels, t.share_tasks) * nr;
  }
  // Column shares hold every row, and a unit share most of them: the scratch is sized for a
  // block of all rows (a share of 196 rows wrote past a scratch sized for ranges of 128).
  t.mt = t.unit_shares || t.share_tasks ? t.tiles * mr : ceil_div(t.tiles, t.m_tasks) * mr;
  t.kblocks = p.k_blocks(std::max<int64_t>(blk.kc, 1));
  for (const auto& kb : t.kblocks) {
    t.max_nseg = std::max(t.max_nseg, kb.nseg);
    t.max_kc = std::max(t.max_kc, kb.kc());
  }
  const int64_t mblock = std::min(mc, t.mt);
  t.a_floats = p.a_scratch_floats(mblock, t.max_kc);
  t.b_floats = p.b_shared() ? 0 : p.K * t.nt;
  t.c_floats = round_up(mblock, mr) * buffer_ld(t.nt, nr);
  t.rows_ptrs = ceil_div(mblock, mr) * t.max_nseg * mr;
  t.edge_floats = mr * nr;
  if (!shared_b_floats(p, nr, t.shared_b)) t.shared_b = INT64_MAX;  // workspace_bytes refuses it
  return t;
}

// Who runs which task: each thread first takes the tasks of its home share (home = the CPU it runs
// on, modulo the threads; a share is an equal run of the tasks in row-major order: rows where there
// are at least as many row ranges as threads, else columns; with column shares, a thread's panels
// and its rows of the leftover ones), then any left, from just past its
// share. A layer's rows then tend to be computed on the core whose L2 holds the same rows of the
// layer before (its input and residual): ResNet-50 0.5-4.3% faster than first-come order in all 9
// alternated in-process rounds (Intel AVX-512, 2 cores, 2026-12-06). Claims are per task, so a
// thread that moved or shares a home only changes the order, never the work done.
class TaskClaims {
 public:
  explicit TaskClaims(int64_t n)
      : claimed_(new std::atomic<bool>[static_cast<size_t>(std::max<int64_t>(n, 1))]()), n_(n) {}
  template <class F>
  void run(const TaskShape& t, int home, int threads, F&& task) {
    const int64_t per_batch = t.per_batch();
    const auto home_of = [&](int64_t i) { return (i % per_batch) * threads / per_batch; };
    int64_t after = 0;  // one past this thread's last home task
    for (int64_t i = 0; i < n_; ++i)
      if (home_of(i) == home) {
        after = i + 1;
        if (claim(i)) task(i);
      }
    for (int64_t k = 0; k < n_; ++k)
      if (const int64_t i = (after + k) % n_; claim(i)) task(i);
  }

 private:
  bool claim(int64_t i) { return !claimed_[static_cast<size_t>(i)].exchange(true, std::memory_order_relaxed); }
  std::unique_ptr<std::atomic<bool>[]> claimed_;
  int64_t n_;
};

// Prefetches part `part` of `parts` equal slices of [p, p + bytes).
void prefetch_slice(const float* p, int64_t bytes, int64_t part, int64_t parts) {
  const int64_t slice = ceil_div(ceil_div(bytes, parts), 64) * 64;
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t o = part * slice; o < std::min(bytes, (part + 1) * slice); o += 64) __builtin_prefetch(c + o);
}

// Per-thread scratch regions carved from one block.
struct Scratch {
  float* a;
  float* b;
  float* c;
  const float** rows;
  float* edge;
};

Scratch carve(const TaskShape& t, float* base) {
  auto align = [](float* p) {
    const uintptr_t v = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<float*>((v + 63) & ~uintptr_t{63});
  };
  Scratch s;
  float* p = align(base);
  s.a = p; p = align(p + t.a_floats);
  s.b = p; p = align(p + t.b_floats);
  s.c = p; p = align(p + t.c_floats);
  s.rows = reinterpret_cast<const float**>(p); p = align(p + t.rows_ptrs * 2);
  s.edge = p;
  return s;
}

// A tile's products over block kb into dst (row stride ld), added to what dst holds when
// `summed`. With `zeros`, segments whose MR rows all point there (a 3x3 conv's first kernel row for
// the image's first output row: 9% of a 14x14 layer's FMAs) add nothing: the kernel runs on the
// runs of segments between them. With `chain`, the last call applies it in registers (tile at
// row0, col0 of the chain's block) and sets `chained`. Returns whether dst now holds sums.
bool run_segments(const KernelSet& ks, MicroKernel kernel, const KBlock& kb, int mr, int nr, const float* const* rows,
                  const float* panel, float* dst, int64_t ld, bool summed, const float* zeros, const TileChain* chain,
                  int64_t row0, int64_t col0, bool& chained) {
  auto padding = [&](int sg) {
    return zeros && std::all_of(rows + sg * mr, rows + (sg + 1) * mr, [&](const float* r) { return r == zeros; });
  };
  int live_end = kb.nseg;  // one past the last segment that reads more than padding
  while (live_end > 0 && padding(live_end - 1)) --live_end;
  for (int s0 = 0; s0 < live_end;) {
    if (padding(s0)) {
      ++s0;
      continue;
    }
    int s1 = s0 + 1;
    while (s1 < kb.nseg && !padding(s1)) ++s1;
    const float* const* run_rows = rows + s0 * mr;
    const float* run_panel = panel + s0 * kb.seg_len * nr;
    if (chain && s1 >= live_end) {
      ks.kernel_chain(s1 - s0, kb.seg_len, run_rows, run_panel, dst, ld, summed, *chain, row0, col0);
      chained = true;
    } else {
      kernel(s1 - s0, kb.seg_len, run_rows, run_panel, dst, ld, summed);
    }
    summed = true;
    s0 = s1;
  }
  return summed;
}

// Full tiles per call of ks.kernel_strided: as many as fill half of L1 with their A rows, so each
// chunk comes from L2 once and from L1 for every panel; 0 where fewer than two fit (deep k: a
// call per tile costs nothing there) or the kernel or the block's segments do not allow it.
int64_t strided_chunk(const KernelSet& ks, const KBlock& kb, int mr) {
  if (!ks.kernel_strided || kb.nseg != 1 || kb.seg_len <= 0) return 0;
  const int64_t chunk = cpu_features().l1d_bytes / 2 / (mr * kb.seg_len * static_cast<int64_t>(sizeof(float)));
  return chunk >= 2 ? chunk : 0;
}

// Whether n row pointers are evenly spaced by whole floats (lda; a 1x1 conv's pixels, a row-major
// A); padding rows, which point at the zeros in scratch, break the spacing. (d * i cannot overflow:
// addresses differ by less than 2^48 and a chunk holds at most L1 / 8 rows.)
bool even_spacing(const float* const* rows, int64_t n, int64_t& lda) {
  const intptr_t a0 = reinterpret_cast<intptr_t>(rows[0]);
  const intptr_t d = n > 1 ? reinterpret_cast<intptr_t>(rows[1]) - a0 : 0;
  if (d % static_cast<intptr_t>(sizeof(float)) != 0) return false;
  for (int64_t i = 2; i < n; ++i)
    if (reinterpret_cast<intptr_t>(rows[i]) - a0 != d * i) return false;
  lda = d / static_cast<intptr_t>(sizeof(float));
  return true;
}

// One task: rows [ma, me) and columns [n0, n0 + nc) of batch b.
void run_task(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, const TaskShape& t, const float* shared_b,
              int slot, const Scratch& s, int64_t b, int64_t ma, int64_t me, int64_t n0, int64_t nc) {
  const int mr = ks.mr, nr = ks.nr;
  const MicroKernel kernel = p.a_kmajor() ? ks.kernel_packed : ks.kernel;
  const int64_t panel_stride = p.K * nr;
  const float* bp;
  if (p.b_shared()) {
    bp = shared_b + p.b_index(b) * round_up(p.N, nr) * p.K + (n0 / nr) * panel_stride;
  } else {
    p.pack_b(p.b_index(b), n0, nc, nr, s.b);
    bp = s.b;
  }
  const int64_t mc_max = std::max<int64_t>(mr, blk.mc / mr * mr);
  const bool skip_zero_rows = p.zero_rows_at_scratch() && !p.a_kmajor();
  for (int64_t m0 = ma; m0 < me; m0 += mc_max) {
    const int64_t mc = std::min(mc_max, me - m0);
    // The user's C, where the problem allows, takes the tile sums in place across K blocks (as
    // BLAS does): a separate buffer would cost a second pass over C.
    int64_t ldc = 0;
    float* direct = p.c_direct(b, m0, n0, ldc);
    float* c = direct ? direct : s.c;
    if (!direct) ldc = buffer_ld(nc, nr);
    const bool adds = direct && p.c_accumulates();  // C holds sums already: every K block adds
    if (t.kblocks.empty() && !adds)  // K = 0: C is all zeros
      for (int64_t i = 0; i < mc; ++i) std::fill_n(c + i * ldc, nc, 0.0f);
    // The epilogue chain in the kernels' registers, tile by tile on the last K block.
    const bool tile_chains = direct && ks.kernel_chain && !p.a_kmajor() && p.chains_tiles();
    TileChain tc;  // for the block at (m0, n0); each tile reads its operands at its offset
    if (tile_chains) p.tile_chain(b, m0, n0, tc);
    for (size_t kbi = 0; kbi < t.kblocks.size(); ++kbi) {
      const KBlock& kb = t.kblocks[kbi];
      p.a_rows(b, m0, mc, kb, mr, s.rows, s.a);
      const bool acc = kbi > 0 || adds, chain_now = tile_chains && kbi + 1 == t.kblocks.size();
      auto tile = [&](int64_t jr, int64_t ir) {
        const int64_t nr_here = std::min<int64_t>(nr, nc - jr);
        const float* panel = bp + (jr / nr) * panel_stride + kb.k0 * nr;
        const float* const* tile_rows = s.rows + (ir / mr) * kb.nseg * mr;
        // (No software prefetch of the next tile's A rows: in a network they are in L2 or L3
        // already, and the bursts of prefetches stalled on full fill buffers: ResNet-50 1.5-2.7%
        // slower with them, 1x1 and 3x3 layers at 14x14 6%; docs/perf.md, 2026-12-06.)
        const int64_t mr_here = std::min<int64_t>(mr, mc - ir);
        float* ct = c + ir * ldc + jr;
        const bool edge = direct && (mr_here < mr || nr_here < nr);  // computed in full aside, added
        float* dst = edge ? s.edge : ct;
        const int64_t ld = edge ? nr : ldc;
        const bool in_kernel = chain_now && !edge;  // else applied below, once the tile is in C
        bool chained = false;
        // Whether dst holds sums (edge tiles start afresh aside; the others add to earlier K blocks).
        // A tile of at most MR / 2 rows (M's last, or all of a 4x4 layer's 16) on the half kernel.
        const MicroKernel k = ks.kernel_half && 2 * mr_here <= mr ? ks.kernel_half : kernel;
        const bool summed = run_segments(ks, k, kb, mr, nr, tile_rows, panel, dst, ld, edge ? false : acc,
                                         skip_zero_rows ? s.a : nullptr, in_kernel ? &tc : nullptr, ir, jr, chained);
        if (edge) {  // one plain loop per case, which the compiler vectorizes (16- and 24-channel convs)
          for (int64_t i = 0; i < mr_here; ++i) {
            float* crow = ct + i * ldc;
            const float* erow = s.edge + i * nr;
            if (summed && acc) {
              for (int64_t j = 0; j < nr_here; ++j) crow[j] += erow[j];
            } else if (summed) {
              std::copy_n(erow, nr_here, crow);
            } else if (!acc) {
              std::fill_n(crow, nr_here, 0.0f);
            }
          }
        } else if (!summed) {  // the whole tile read padding in this first block
          for (int64_t i = 0; i < mr_here; ++i) std::fill_n(ct + i * ldc, nr_here, 0.0f);
        }
        if (chain_now && !(in_kernel && chained)) tc.apply(mr_here, nr_here, ct, ir, jr);
      };
      // nt full tiles from tile t0 by column runs (strided_chunk), where their rows are evenly spaced.
      auto strided = [&](int64_t t0, int64_t nt) {
        const float* const* r = s.rows + t0 * mr;  // one segment: tile t's rows at s.rows + t * mr
        int64_t lda = 0;
        const bool even = even_spacing(r, nt * mr, lda);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          if (!even || nc - jr < nr) {  // per tile: rows in no even spacing, or the edge panel
            for (int64_t t = t0; t < t0 + nt; ++t) tile(jr, t * mr);
            continue;
          }
          const float* panel = bp + (jr / nr) * panel_stride + kb.k0 * nr;
          ks.kernel_strided(nt, kb.seg_len, r[0], lda, panel, c + t0 * mr * ldc + jr, ldc, acc,
                            chain_now ? &tc : nullptr, t0 * mr, jr);
        }
      };
      if (!p.a_kmajor() && kb.kc() * round_up(nc, nr) <= kSmallBFloats) {
        // A in place and a B block that fits L2: each A tile (or chunk of tiles) stays in L1 across
        // the panels.
        const int64_t chunk = strided_chunk(ks, kb, mr), full = chunk ? mc / mr : 0;
        for (int64_t t0 = 0; t0 < full; t0 += chunk) strided(t0, std::min(chunk, full - t0));
        for (int64_t ir = full * mr; ir < mc; ir += mr)
          for (int64_t jr = 0; jr < nc; jr += nr) tile(jr, ir);
      } else {  // each B panel stays in L1 across the A tiles (A from L2: packed, or rows in place)
        const int64_t tiles = ceil_div(mc, mr), panel_bytes = kb.kc() * nr * 4;
        // B comes from L3 (all of it is packed up front): fetch the next panel a slice per tile,
        // so the next column of tiles does not start on L3 latency (~6% in sgemm). Only where a
        // slice is a few lines: larger bursts stall on the fill buffers, and the kernel's own
        // stream prefetch runs ahead anyway (a matrix-vector product's one-tile column: 88% of
        // run_task's samples at 1 x 2048 x 1000; a conv's K blocks of up to 2048 at 7x7, 7 tiles
        // of 36 KB slices: 4.4% of ResNet-50's samples, 93% of them on the prefetch).
        const bool prefetch_next = ceil_div(panel_bytes, tiles) <= kMaxSliceBytes;
        for (int64_t jr = 0; jr < nc; jr += nr)
          for (int64_t ir = 0; ir < mc; ir += mr) {
            if (prefetch_next && jr + nr < nc)
              prefetch_slice(bp + (jr / nr + 1) * panel_stride + kb.k0 * nr, panel_bytes, ir / mr, tiles);
            tile(jr, ir);
          }
      }
    }
    // Without a register chain, the whole block at once (from L2), not tile by tile after each
    // tile's last K block (in L1): a call per tile cost ResNet-50 ~10% and MobileNetV2 ~9% more.
    if (direct && !tile_chains) p.c_direct_done(b, m0, mc, n0, nc, c, ldc);
    else if (!direct) p.c_block(slot, b, m0, mc, n0, nc, c, ldc);
  }
}

// Packs every B matrix once, a group of NR panels per work item (so a row-major B is read in
// runs of 512 bytes, not one 64-byte piece per row and page), fewer where that would leave a
// thread without an item (a conv's 256 output channels are 8 AVX-512 panels: as one item the
// second thread sat idle through the whole pack, 0.09 ms of a 0.6 ms 3x3 C256 14x14 layer); a
// small B is packed by the caller alone, which is cheaper than waking the pool for it.
void pack_shared_b(const GemmProblem& p, const KernelSet& ks, int64_t total_floats, ThreadPool& pool, float* dst) {
  constexpr int64_t kPanelsPerItem = 8;
  const int64_t panels = ceil_div(p.N, ks.nr) * p.b_count(), want = 2 * static_cast<int64_t>(pool.size());
  const int64_t per_item = std::clamp<int64_t>(panels / want, 1, kPanelsPerItem);
  const int64_t nr = ks.nr, cols = per_item * nr, groups = ceil_div(p.N, cols);
  const int64_t stride = round_up(p.N, nr) * p.K;
  auto pack = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t d = i / groups, n0 = (i % groups) * cols;
      p.pack_b(d, n0, std::min(cols, p.N - n0), ks.nr, dst + d * stride + (n0 / nr) * p.K * nr);
    }
  };
  if (total_floats < (int64_t{1} << 15)) pack(0, p.b_count() * groups);
  else pool.parallel_for(p.b_count() * groups, pack);
}

}  // namespace

std::vector<KBlock> GemmProblem::k_blocks(int64_t kc) const {
  std::vector<KBlock> out;
  if (K <= 0) return out;
  const int64_t n = ceil_div(K, kc), step = ceil_div(K, n);
  for (int64_t k0 = 0; k0 < K; k0 += step) out.push_back(KBlock{k0, 1, std::min(step, K - k0)});
  return out;
}

int ThreadSlots::acquire() {
  for (;;) {
    for (size_t i = 0; i < busy_.size(); ++i) {
      bool expected = false;
      if (!busy_[i].load(std::memory_order_relaxed) &&
          busy_[i].compare_exchange_strong(expected, true, std::memory_order_acquire))
        return static_cast<int>(i);
    }
    std::this_thread::yield();  // more callers than slots: wait for one to finish
  }
}

bool packed_b_floats(int64_t count, int64_t n, int64_t k, int64_t nr, int64_t& out) {
  return checked::mul(count, round_up(n, nr), out) && checked::mul(out, k, out);
}

bool workspace_bytes(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, int threads, int64_t& out,
                     bool b_aside) {
  // Packed B first: plan_tasks lists K blocks, which grow with K too.
  if (int64_t b = 0; !shared_b_floats(p, ks.nr, b) || b > checked::kMaxSpanBytes / 4) return false;
  const TaskShape t = plan_tasks(p, ks, blk, threads);
  int64_t floats = 0;
  return checked::add(b_aside ? 0 : t.shared_b, kAlignFloats, floats) &&
         checked::mul_add(t.per_thread(), std::max(threads, 1), floats, floats) && checked::mul(floats, 4, out);
}

bool packed_b_size(const GemmProblem& p, const KernelSet& ks, int64_t& floats) {
  return shared_b_floats(p, ks.nr, floats);
}

void pack_b_whole(const GemmProblem& p, const KernelSet& ks, ThreadPool& pool, float* dst) {
  int64_t floats = 0;
  if (packed_b_size(p, ks, floats)) pack_shared_b(p, ks, floats, pool, dst);
}

Status run(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, ThreadPool& pool, void* workspace,
           const float* packed_b) {
  const int threads = pool.size();
  const TaskShape t = plan_tasks(p, ks, blk, threads);
  const bool b_aside = packed_b && p.b_shared();
  std::vector<float> own;
  float* ws = static_cast<float*>(workspace);
  if (!ws) {
    int64_t bytes = 0;
    if (!workspace_bytes(p, ks, blk, threads, bytes, b_aside) || bytes > checked::kMaxSpanBytes)
      return {ErrorCode::GRAPH_NOT_SUPPORTED, "the GEMM's workspace for " + std::to_string(threads) +
                                                  " threads exceeds 2^48 bytes"};
    own.resize(static_cast<size_t>(bytes / 4));
    ws = own.data();
  }
  float* const base = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(ws) + 63) & ~uintptr_t{63});
  float* per_thread = base + (b_aside ? 0 : round_up(t.shared_b, kAlignFloats));
  const float* shared_b = b_aside ? packed_b : base;
  if (p.b_shared() && !b_aside) pack_shared_b(p, ks, t.shared_b, pool, base);
  // Tasks are claimed one at a time (the pool's chunks would group several), each thread first
  // those of its home share of the rows, then any left (TaskClaims).
  ThreadSlots slots(threads);
  const int64_t tasks = t.task_count(p.batch);
  TaskClaims claims(tasks);
  pool.parallel_for(std::min<int64_t>(tasks, threads), [&](int64_t, int64_t) {
    SlotGuard g(slots);
    if (ks.begin_tiles) ks.begin_tiles();
    const Scratch s = carve(t, per_thread + g.slot() * t.per_thread());
    const int cpu = current_cpu();
    claims.run(t, cpu >= 0 ? cpu % threads : g.slot(), threads, [&](int64_t i) {
      const TaskBlock tb = task_block(t, p, ks.mr, ks.nr, i);
      if (tb.ma < tb.me) run_task(p, ks, blk, t, shared_b, g.slot(), s, tb.b, tb.ma, tb.me, tb.n0, tb.nc);
    });
  });
  return {};
}

}  // namespace dnngraph::cpu::gemm
