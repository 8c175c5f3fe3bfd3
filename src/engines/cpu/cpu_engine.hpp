// The frame of the CPU engines. check() and build() run one `prepare` of the partition, so build()
// refuses exactly what check() refuses, with check's reason under the engine's name; an engine's
// knobs (a struct of cpu_knobs.hpp) come from its one schema: its knob space, the check of a
// setting, and the parse into the Setting its plan is built with.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/checked.hpp"
#include "engines/cpu/cpu_knobs.hpp"
#include "planning/engine.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cpu {

// False, with why, when the target is not the CPU.
inline bool on_cpu(const Target& t, std::string& why) {
  if (t.device().is_cpu()) return true;
  why = "runs on the CPU only; the handle is " + t.device().to_string();
  return false;
}

// Prepared: what prepare() derives from the partition and make_plan() consumes (an epilogue, a
// geometry, ...). KnobStruct: NoKnobs, IsaKnobs or GemmKnobs.
template <class Prepared, class KnobStruct = NoKnobs>
class CpuEngine : public Engine {
 public:
  using Setting = typename KnobStruct::Setting;

  std::string_view name() const final { return name_; }

  Support check(const Partition& p, const Target& t) const final {
    Prepared prep;
    std::string why;
    return prepare(p, t, prep, why) ? Support::yes() : Support::no(std::move(why));
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const final {
    if constexpr (std::is_same_v<KnobStruct, GemmKnobs>)
      return cpu::knob_space(schema_, [&](Isa isa) { return blocking(p, isa); });
    else if constexpr (kHasKnobs)
      return cpu::knob_space(schema_);
    else
      return Engine::knob_space(p, t);
  }

  Status check_knobs(const Knobs& k) const final {
    if constexpr (kHasKnobs) return schema_.validate(k);
    else return Engine::check_knobs(k);
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const final {
    Prepared prep;
    std::string why;
    if (!prepare(p, t, prep, why)) return unsupported(name_, why);
    Setting setting{};
    if constexpr (kHasKnobs)
      if (auto s = read_knobs(schema_, name_, k, setting); !s.ok()) return s;
    plan = make_plan(p, t, std::move(prep), setting);
    // check() refused what grows with the problem; the knobs' blocking and the threads may add more.
    if (plan->workspace_size() > checked::kMaxSpanBytes) {
      plan.reset();
      return unsupported(name_, "with these knobs and " + std::to_string(t.handle->thread_pool().size()) +
                                    " threads the plan's workspace needs more than 2^48 bytes");
    }
    return {};
  }

 protected:
  explicit CpuEngine(std::string_view name) : name_(name), schema_(knob_schema<KnobStruct>(name)) {}

  // Whether the engine runs p on t; false with `why` (naming the node, tensor and rule) if not.
  virtual bool prepare(const Partition& p, const Target& t, Prepared& out, std::string& why) const = 0;
  // GEMM knobs: the blocking the knob space offers for p on an ISA (the ISA's default here).
  virtual gemm::Blocking blocking(const Partition&, Isa isa) const { return gemm::default_blocking(gemm::kernel_set(isa)); }
  // The plan for a partition prepare() accepted, with the setting its knobs resolved to.
  virtual std::unique_ptr<Plan> make_plan(const Partition& p, const Target& t, Prepared prep,
                                          const Setting& setting) const = 0;

 private:
  static constexpr bool kHasKnobs = !std::is_same_v<KnobStruct, NoKnobs>;
  std::string_view name_;
  KnobSchema<KnobStruct> schema_;
};

}  // namespace dnngraph::cpu
