// What every plan on the blocked GEMM driver holds: the partition and its epilogue (prepared to
// run in place along one dim of the output), the kernels and blocking its knobs chose, and a
// workspace sized for the threads the plan was built for, handed to the driver while the pool
// still fits it.
#pragma once
#include <algorithm>
#include <cstdint>

#include "engines/cpu/cpu_knobs.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu::gemm {

class GemmPlan : public Plan {
 public:
  int64_t workspace_size() const override { return ws_; }

 protected:
  GemmPlan(const Partition& p, const Epilogue& epi, int in_place_dim, const GemmSetting& s, int threads)
      : part_(p), epi_(epi), ks_(kernel_set(s.isa)), blk_(s.blocking), threads_(threads) {
    epi_.prepare_in_place(in_place_dim);
  }

  const Epilogue& epilogue() const { return epi_; }
  const KernelSet& kernels() const { return ks_; }
  // Grows the workspace to what `sizing` (the problem built without pointers) needs.
  void reserve_workspace(const GemmProblem& sizing) {
    ws_ = std::max(ws_, workspace_bytes(sizing, ks_, blk_, threads_) + 64);
  }
  void run_problem(const GemmProblem& prob, ThreadPool& pool, void* workspace) const {
    run(prob, ks_, blk_, pool, usable_workspace(workspace, threads_, pool.size()));
  }

 private:
  Partition part_;
  Epilogue epi_;
  const KernelSet& ks_;
  Blocking blk_;
  int threads_;
  int64_t ws_ = 0;
};

}  // namespace dnngraph::cpu::gemm
