// The blocked GEMM driver (Goto/BLIS loop nest) shared by every CPU engine that reduces to GEMM:
// tasks of (batch, M range, N range) run in parallel; each walks M blocks of mc rows, K blocks
// of about kc, NR-wide B panels and MR-row micro-tiles, and hands each finished C block to the
// problem's sink while it is still in cache. What A, B and C are (a strided matrix, packed
// weights, input patches gathered on the fly, ...) is up to the GemmProblem.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dnngraph/status.hpp"
#include "engines/cpu/gemm/microkernel.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu::gemm {

struct Blocking {
  int64_t mc = 0, kc = 0, nc = 0;
};
// From the cache sizes: a kc x NR B panel fills two thirds of L1, an mc x kc A block a quarter of L2.
Blocking default_blocking(const KernelSet& ks);
// A matmul's (A packed in k-major panels per K block): K in equal blocks of at most twice L1 of B
// panel each, mc from L2 as above.
Blocking matmul_blocking(const KernelSet& ks, int64_t K);

// A block of the K dimension: B rows [k0, k0 + nseg * seg_len); A given as nseg segments.
struct KBlock {
  int64_t k0 = 0;
  int nseg = 1;
  int64_t seg_len = 0;
  int64_t kc() const { return nseg * seg_len; }
};

class GemmProblem {
 public:
  virtual ~GemmProblem() = default;
  int64_t batch = 1, M = 0, N = 0, K = 0;

  // K cut into blocks of at most about kc. Default: equal blocks of one segment each.
  virtual std::vector<KBlock> k_blocks(int64_t kc) const;
  // A rows [m0, m0 + mc) over block kb, for micro-tiles of mr rows: rows[(t * nseg + s) * mr + i]
  // is row t * mr + i of segment s (seg_len floats, unit stride). Rows past mc must still be
  // readable (point them at a valid row). May pack into `scratch` (a_scratch_floats floats).
  virtual void a_rows(int64_t b, int64_t m0, int64_t mc, const KBlock& kb, int mr, const float** rows,
                      float* scratch) const = 0;
  virtual int64_t a_scratch_floats(int64_t /*mc*/, int64_t /*kc*/) const { return 0; }
  // True when a_rows points every row that reads only zeros (a conv's taps in the padding) at
  // `scratch` itself: a micro-tile whose rows all do so in a K block adds nothing and is skipped.
  virtual bool zero_rows_at_scratch() const { return false; }
  // True when a_rows packs each micro-tile as one k-major panel (KernelSet::kernel_packed's
  // form) and only rows[(t * nseg + s) * mr] is meaningful.
  virtual bool a_kmajor() const { return false; }
  // True when a_rows copies most rows into `scratch` at a cost per byte well above streaming B
  // (plan_tasks then splits M before N: every N task copies its rows of A again).
  virtual bool a_gathered() const { return false; }

  // B: `b_count` distinct matrices; batch b uses b_index(b). pack_b packs columns [n0, n0 + nc)
  // of matrix d over all of K into NR-wide panels: panel p at dst + p * K * nr, zero-padded.
  virtual int64_t b_count() const { return batch; }
  virtual int64_t b_index(int64_t b) const { return b; }
  virtual void pack_b(int64_t d, int64_t n0, int64_t nc, int nr, float* dst) const = 0;
  // True: B is packed once for all tasks (weights); false: per task, as it is cheap to gather
  // and large (input patches).
  virtual bool b_shared() const { return true; }

  // C: where a block may be accumulated in place (fp32, unit stride along N), or null to get a
  // buffer that is handed to c_block once the block is final.
  virtual float* c_direct(int64_t /*b*/, int64_t /*m0*/, int64_t /*n0*/, int64_t& /*ldc*/) const { return nullptr; }
  // True when the C that c_direct gives already holds sums to add to (a reduction run as several
  // GEMMs: conv_wgrad's chunks of pixels): its first K block adds too.
  virtual bool c_accumulates() const { return false; }
  virtual void c_block(int /*slot*/, int64_t /*b*/, int64_t /*m0*/, int64_t /*mc*/, int64_t /*n0*/, int64_t /*nc*/,
                       const float* /*c*/, int64_t /*ldc*/) const {}
  // Called once a block of C given by c_direct is final (all K blocks summed), while it is still in
  // cache: where c_direct handed out the epilogue's output, the problem finishes it here in place.
  virtual void c_direct_done(int64_t /*b*/, int64_t /*m0*/, int64_t /*mc*/, int64_t /*n0*/, int64_t /*nc*/,
                             float* /*c*/, int64_t /*ldc*/) const {}
  // True when c_direct_done's work is an in-place chain that tile_chain gives per block: the
  // driver then applies it to each tile in the kernel's registers (KernelSet::kernel_chain) on the
  // last K block, and calls no c_direct_done for such blocks.
  virtual bool chains_tiles() const { return false; }
  // The chain of the block whose first element is (m0, n0) of batch b.
  virtual void tile_chain(int64_t /*b*/, int64_t /*m0*/, int64_t /*n0*/, TileChain& /*tc*/) const {}
};

// Hands out slot numbers to the threads inside one parallel_for (at most `n` at once).
class ThreadSlots {
 public:
  explicit ThreadSlots(int n) : busy_(static_cast<size_t>(n)) {}
  int acquire();
  void release(int s) { busy_[static_cast<size_t>(s)].store(false, std::memory_order_release); }
  int size() const { return static_cast<int>(busy_.size()); }

 private:
  std::vector<std::atomic<bool>> busy_;
};

class SlotGuard {
 public:
  explicit SlotGuard(ThreadSlots& s) : s_(s), slot_(s.acquire()) {}
  ~SlotGuard() { s_.release(slot_); }
  int slot() const { return slot_; }

 private:
  ThreadSlots& s_;
  int slot_;
};

// Floats of `count` K x N matrices B packed whole in panels nr wide (N rounded up to nr): the one
// workspace size that grows with the problem rather than the blocking; false on overflow.
bool packed_b_floats(int64_t count, int64_t n, int64_t k, int64_t nr, int64_t& out);

// Bytes of workspace run() needs with `threads` workers; false when they overflow int64 or B
// packed whole alone exceeds 2^48 bytes. `b_aside`: B is packed elsewhere (pack_b_whole), so
// only the per-thread buffers count.
bool workspace_bytes(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, int threads, int64_t& out,
                     bool b_aside = false);

// Floats of p's B packed whole for the kernels `ks` (what pack_b_whole writes); false on overflow.
bool packed_b_size(const GemmProblem& p, const KernelSet& ks, int64_t& floats);
// Packs every B matrix of p whole into `dst` (packed_b_size floats), in the layout run() reads.
void pack_b_whole(const GemmProblem& p, const KernelSet& ks, ThreadPool& pool, float* dst);

// The workspace a plan sized for `planned_threads` may hand to run() on a pool of `pool_threads`:
// null (run() allocates its own) when the pool has grown since.
inline void* usable_workspace(void* ws, int planned_threads, int pool_threads) {
  return pool_threads <= planned_threads ? ws : nullptr;
}

// Runs the GEMM on the pool; `workspace` holds workspace_bytes(p, ks, blk, pool.size()) bytes
// (null: allocated here, an error if that would exceed 2^48 bytes). c_block calls get slot numbers
// below pool.size(). `packed_b`: B as pack_b_whole left it (then the workspace is the one sized
// with b_aside), else null: B is packed into the workspace first.
Status run(const GemmProblem& p, const KernelSet& ks, const Blocking& blk, ThreadPool& pool, void* workspace,
           const float* packed_b = nullptr);

}  // namespace dnngraph::cpu::gemm
