// What the CPU convolutions outside the GEMM driver share. ConvPlanBase: a plan's partition, its
// epilogue (run in place along the output's channels), the conv's geometry, and an execute()
// that opens the epilogue's run for the conv and finishes it. DirectConvEngine:
// the frame of the direct conv_fprop engines: check_conv_fprop plus the engine's geometry rule, a
// bandwidth-bound estimate at the engine's measured fraction of the FMA peak, and a PlanType
// built from the partition and its epilogue.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/cpu_engine.hpp"

namespace dnngraph::cpu {

class ConvPlanBase : public Plan {
 public:
  Status execute(const ExecArgs& args) const final {
    ThreadPool& pool = args.handle.thread_pool();
    EpilogueRun run(epi_, args.ptrs, pool.size());
    if (auto s = run_conv(args, pool, run); !s.ok()) return s;
    return run.finish();
  }

 protected:
  ConvPlanBase(const Partition& p, const Epilogue& epi) : part_(p), epi_(epi) {
    g_.init(p);
    epi_.prepare_in_place(1);  // the channel dim of the output
  }
  // The conv on the pool, its sums handed to `run` (or written to the output directly).
  virtual Status run_conv(const ExecArgs& args, ThreadPool& pool, EpilogueRun& run) const = 0;

  Partition part_;
  Epilogue epi_;
  ConvGeometry g_;
};

template <class PlanType>
class DirectConvEngine : public CpuEngine<Epilogue> {
 public:
  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const final {
    return roofline_seconds(partition_flops(p), 1.5 * partition_bytes(p), t.info(), peak_fraction_, 5e-6);
  }

 protected:
  DirectConvEngine(std::string_view name, double peak_fraction) : CpuEngine(name), peak_fraction_(peak_fraction) {}
  // Empty when the engine runs geometry g of partition p, else the rule g breaks.
  virtual std::string rule(const Partition& p, const ConvGeometry& g) const = 0;

 private:
  bool prepare(const Partition& p, const Target& t, Epilogue& epi, std::string& why) const final {
    return check_conv_fprop(p, t, epi, why, [&](const ConvGeometry& g) { return rule(p, g); });
  }
  std::unique_ptr<Plan> make_plan(const Partition& p, const Target&, Epilogue epi, const Setting&) const final {
    return std::make_unique<PlanType>(p, epi);
  }

  double peak_fraction_;
};

}  // namespace dnngraph::cpu
