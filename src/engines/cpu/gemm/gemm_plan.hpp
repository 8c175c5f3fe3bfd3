// What every plan on the blocked GEMM driver holds: the partition and its epilogue (prepared to
// run in place along one dim of the output), the kernels and blocking its knobs chose, and a
// workspace sized for the threads the plan was built for, handed to the driver while the pool
// still fits it. GemmEngine: the frame of the engines whose plans those are.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "core/checked.hpp"
#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/cpu_knobs.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/gemm/constant_b.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu::gemm {

class GemmPlan : public Plan {
 public:
  int64_t workspace_size() const override { return ws_; }

 protected:
  // `shape`: one of kernel_shapes(s.isa) (null: kernel_set(s.isa)).
  GemmPlan(const Partition& p, const Epilogue& epi, int in_place_dim, const GemmSetting& s, int threads,
           const KernelSet* shape = nullptr)
      : part_(p), epi_(epi), ks_(shape ? *shape : kernel_set(s.isa)), blk_(s.blocking), threads_(threads) {
    epi_.prepare_in_place(in_place_dim);
  }

  const Epilogue& epilogue() const { return epi_; }
  const KernelSet& kernels() const { return ks_; }
  const Blocking& blocking() const { return blk_; }
  // For a plan whose tile kernel bounds the knobs' blocking (AMX): call before reserve_workspace.
  void set_blocking(const Blocking& b) { blk_ = b; }
  // For a plan that runs one problem whose shared B is read from tensor `b_tensor`: when that
  // tensor is constant, B is packed once per pointer into plan memory (ConstantB) rather than into
  // the workspace on every execute. Call before reserve_workspace.
  void keep_b_if_constant(int b_tensor) {
    if (b_tensor >= 0 && part_.tensor(b_tensor).is_constant) kept_b_tensor_ = b_tensor;
  }
  bool b_kept() const { return kept_b_tensor_ >= 0; }
  int64_t b_packs() const { return kept_b_.packs(); }
  // Grows the workspace to what `sizing` (the problem built without pointers) needs; INT64_MAX
  // when that overflows (CpuEngine::build refuses workspaces above 2^48 bytes).
  void reserve_workspace(const GemmProblem& sizing) {
    int64_t bytes = 0;
    const bool ok = workspace_bytes(sizing, ks_, blk_, threads_, bytes, b_kept() && sizing.b_shared()) &&
                    checked::add(bytes, 64, bytes);
    ws_ = ok ? std::max(ws_, bytes) : INT64_MAX;
  }
  Status run_problem(const GemmProblem& prob, ThreadPool& pool, void* workspace, const std::vector<void*>& ptrs) const {
    void* ws = usable_workspace(workspace, threads_, pool.size());
    if (!b_kept() || !prob.b_shared()) return run(prob, ks_, blk_, pool, ws);
    int64_t floats = 0;
    if (!packed_b_size(prob, ks_, floats)) return {ErrorCode::GRAPH_NOT_SUPPORTED, "the packed B overflows"};
    const ConstantB::Packed b = kept_b_.get(ptrs[static_cast<size_t>(kept_b_tensor_)], floats,
                                            [&](float* dst) { pack_b_whole(prob, ks_, pool, dst); });
    return run(prob, ks_, blk_, pool, ws, b.data);
  }

 private:
  Partition part_;
  Epilogue epi_;
  const KernelSet& ks_;
  Blocking blk_;
  int threads_;
  int64_t ws_ = 0;
  int kept_b_tensor_ = -1;  // the constant tensor B is packed from, or -1
  ConstantB kept_b_;
};

// The B operand a GEMM engine packs whole: `count` matrices of K x N.
struct PackedB {
  int64_t count = 1, n = 0, k = 0;
};

// An engine on the GEMM driver: GEMM knobs, and a PlanType (a GemmPlan) built from the partition,
// its epilogue, the knob setting and the thread count of the target's pool. check() refuses a
// packed B above 2^48 bytes, the workspace term that grows with the problem (the per-thread
// buffers grow with the blocking only; build() checks the whole workspace of the plan it makes).
template <class PlanType>
class GemmEngine : public CpuEngine<Epilogue, GemmKnobs> {
 protected:
  using CpuEngine::CpuEngine;
  // The engine's own rules for the partition (check_anchor and more); false with `why` if not.
  virtual bool accepts(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const = 0;
  // The B its plan packs, for a partition accepts() took (an upper bound where phases split it).
  virtual PackedB packed_b(const Partition& p) const = 0;

 private:
  bool prepare(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const final {
    if (!accepts(p, t, epi, why)) return false;
    const PackedB b = packed_b(p);
    int64_t nr = 1;  // the widest tile pads N the most
    for (const KernelSet* ks : kernel_shapes(cpu_features().best())) nr = std::max<int64_t>(nr, ks->nr);
    if (int64_t floats = 0; packed_b_floats(b.count, b.n, b.k, nr, floats) && floats <= checked::kMaxSpanBytes / 4)
      return true;
    const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
    why = "node '" + n.name + "', tensor '" + p.graph->tensor(n.inputs[1]).name +
          "': packed whole for the GEMM it needs more than 2^48 bytes of workspace";
    return false;
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target& t, Epilogue epi,
                                  const GemmSetting& s) const final {
    return std::make_unique<PlanType>(p, epi, s, t.handle->thread_pool().size());
  }
};

}  // namespace dnngraph::cpu::gemm
