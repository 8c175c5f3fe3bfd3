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
#include "engines/cpu/cpu_knobs.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu::gemm {

// What a plan is made for: to run, or only to size its workspace in check() (no lookup tables).
enum class PlanUse { EXECUTE, SIZING };

class GemmPlan : public Plan {
 public:
  int64_t workspace_size() const override { return ws_; }

  // False, with `why` naming the anchor's B operand (the matrix packed whole), when the workspace
  // overflowed int64 or exceeds checked::kMaxSpanBytes.
  bool workspace_fits(std::string& why) const {
    if (ws_ <= checked::kMaxSpanBytes) return true;
    const ir::Node& n = part_.graph->nodes[static_cast<size_t>(part_.anchor)];
    why = "node '" + n.name + "', tensor '" + part_.graph->tensor(n.inputs[1]).name +
          "': packed for the GEMM, with the per-thread buffers, it needs more than 2^48 bytes of workspace";
    return false;
  }

 protected:
  GemmPlan(const Partition& p, const Epilogue& epi, int in_place_dim, const GemmSetting& s, int threads)
      : part_(p), epi_(epi), ks_(kernel_set(s.isa)), blk_(s.blocking), threads_(threads) {
    epi_.prepare_in_place(in_place_dim);
  }

  const Epilogue& epilogue() const { return epi_; }
  const KernelSet& kernels() const { return ks_; }
  // Grows the workspace to what `sizing` (the problem built without pointers) needs; INT64_MAX
  // when that overflows, which workspace_fits() refuses.
  void reserve_workspace(const GemmProblem& sizing) {
    int64_t bytes = 0;
    const bool ok = workspace_bytes(sizing, ks_, blk_, threads_, bytes) && checked::add(bytes, 64, bytes);
    ws_ = ok ? std::max(ws_, bytes) : INT64_MAX;
  }
  Status run_problem(const GemmProblem& prob, ThreadPool& pool, void* workspace) const {
    return run(prob, ks_, blk_, pool, usable_workspace(workspace, threads_, pool.size()));
  }

 private:
  Partition part_;
  Epilogue epi_;
  const KernelSet& ks_;
  Blocking blk_;
  int threads_;
  int64_t ws_ = 0;
};

// An engine on the GEMM driver: GEMM knobs, and a PlanType (a GemmPlan) built from the partition,
// its epilogue, the knob setting, the thread count of the target's pool and its PlanUse. check()
// also sizes the plan's workspace at the default setting (the knobs change only the per-thread
// buffers, which the blocking limits bound; build() checks the plan it makes).
template <class PlanType>
class GemmEngine : public CpuEngine<Epilogue, GemmKnobs> {
 protected:
  using CpuEngine::CpuEngine;
  // The engine's own rules for the partition (check_anchor and more); false with `why` if not.
  virtual bool accepts(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const = 0;

 private:
  bool prepare(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const final {
    if (!accepts(p, t, epi, why)) return false;
    const int threads = t.handle->thread_pool().size();
    return PlanType(p, epi, default_gemm_setting(), threads, PlanUse::SIZING).workspace_fits(why);
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target& t, Epilogue epi,
                                  const GemmSetting& s) const final {
    return std::make_unique<PlanType>(p, epi, s, t.handle->thread_pool().size(), PlanUse::EXECUTE);
  }
};

}  // namespace dnngraph::cpu::gemm
