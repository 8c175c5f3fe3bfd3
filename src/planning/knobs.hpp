// Knobs: an engine's tuning choices. Each engine declares a typed struct of its knobs and one
// KnobSchema over it, which parses (and validates), prints and checks them; `Knobs` (name ->
// value, ordered) is their form in plan labels, tuning DB records and serialized plans.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dnngraph/status.hpp"

namespace dnngraph {

using Knobs = std::map<std::string, int64_t>;

// "tile_m=128,tile_n=128"; "" for no knobs.
std::string knobs_to_string(const Knobs& k);
// Reads knobs_to_string's form back ("" or "-" for none); false on malformed text.
bool parse_knobs(const std::string& text, Knobs& knobs);

// One knob: its name, the member of the engine's struct that holds it, and the values it takes.
template <class T>
struct KnobField {
  KnobField(std::string_view name_, int64_t T::*member_, int64_t min_, int64_t max_, std::vector<int64_t> values_ = {},
            bool printed_at_default_ = true)
      : name(name_), member(member_), min(min_), max(max_), values(std::move(values_)),
        printed_at_default(printed_at_default_) {}
  std::string_view name;
  int64_t T::*member;
  int64_t min, max;                // inclusive
  std::vector<int64_t> values;     // when not empty, the only values allowed
  bool printed_at_default = true;  // false: left out of the printed form at the struct's default
};

// The rules between knobs (pingpong needs tile_n 128, ...): "" when they hold, else why not.
template <class T>
using KnobRule = std::string (*)(const T&);

template <class T>
class KnobSchema {
 public:
  KnobSchema(std::string_view engine, std::vector<KnobField<T>> fields, KnobRule<T> rule = nullptr)
      : engine_(engine), fields_(std::move(fields)), rule_(rule) {}

  // Overwrites the members of `out` that `k` names (the rest keep what `out` holds: the defaults).
  // An unknown knob, a value outside its field's range or set, or a broken rule is an error that
  // names the engine, the knob and the rule.
  Status parse(const Knobs& k, T& out) const {
    for (const auto& [name, value] : k) {
      const KnobField<T>* f = field(name);
      if (!f) return error("no knob '" + name + "' (its knobs: " + names() + ")");
      if (value < f->min || value > f->max || (!f->values.empty() && !contains(f->values, value)))
        return error("knob " + name + "=" + std::to_string(value) + " is not " + allowed(*f));
      out.*(f->member) = value;
    }
    if (rule_)
      if (std::string why = rule_(out); !why.empty()) return error("knobs " + knobs_to_string(k) + ": " + why);
    return {};
  }

  // Every knob, except those marked to be left out at their default.
  Knobs print(const T& v) const {
    const T defaults{};
    Knobs k;
    for (const auto& f : fields_)
      if (f.printed_at_default || v.*(f.member) != defaults.*(f.member)) k[std::string(f.name)] = v.*(f.member);
    return k;
  }

  Status validate(const Knobs& k) const {
    T t{};
    return parse(k, t);
  }

 private:
  const KnobField<T>* field(std::string_view name) const {
    for (const auto& f : fields_)
      if (f.name == name) return &f;
    return nullptr;
  }
  static bool contains(const std::vector<int64_t>& v, int64_t x) {
    for (int64_t e : v)
      if (e == x) return true;
    return false;
  }
  static std::string allowed(const KnobField<T>& f) {
    if (f.values.empty()) return "in " + std::to_string(f.min) + ".." + std::to_string(f.max);
    std::string s = "one of ";
    for (size_t i = 0; i < f.values.size(); ++i) s += (i ? ", " : "") + std::to_string(f.values[i]);
    return s;
  }
  std::string names() const {
    std::string s;
    for (const auto& f : fields_) s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s.empty() ? "none" : s;
  }
  Status error(const std::string& what) const { return {ErrorCode::INVALID_VALUE, std::string(engine_) + ": " + what}; }

  std::string_view engine_;
  std::vector<KnobField<T>> fields_;
  KnobRule<T> rule_;
};

}  // namespace dnngraph
