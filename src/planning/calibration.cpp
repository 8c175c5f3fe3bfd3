#include "planning/calibration.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <utility>

#include "graph/op_traits.hpp"
#include "planning/engine.hpp"

namespace dnngraph {
namespace {

constexpr std::array<std::pair<WorkloadFamily, std::string_view>, 10> kFamilies{{
    {WorkloadFamily::CONV, "conv"},
    {WorkloadFamily::CONV_NARROW, "conv_narrow"},
    {WorkloadFamily::CONV_1X1, "conv_1x1"},
    {WorkloadFamily::CONV_GROUPED, "conv_grouped"},
    {WorkloadFamily::CONV_DGRAD, "conv_dgrad"},
    {WorkloadFamily::CONV_WGRAD, "conv_wgrad"},
    {WorkloadFamily::MATMUL, "matmul"},
    {WorkloadFamily::SDPA, "sdpa"},
    {WorkloadFamily::NORM, "norm"},
    {WorkloadFamily::POINTWISE, "pointwise"},
}};
constexpr std::array<std::pair<SizeClass, std::string_view>, 4> kSizes{{
    {SizeClass::UNDER_2US, "under_2us"},
    {SizeClass::UNDER_20US, "under_20us"},
    {SizeClass::UNDER_200US, "under_200us"},
    {SizeClass::LARGER, "larger"},
}};

constexpr std::array<std::pair<Precision, std::string_view>, 4> kPrecisions{{
    {Precision::HALF, "half"},
    {Precision::SINGLE, "single"},
    {Precision::BYTE, "byte"},
    {Precision::TF32, "tf32"},
}};

template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E e) {
  for (const auto& [v, n] : names)
    if (v == e) return n;
  return "?";
}
template <class E, size_t N>
bool value_of(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view text, E& e) {
  for (const auto& [v, n] : names)
    if (n == text) return e = v, true;
  return false;
}

// Output channels up to which a gathering conv is CONV_NARROW: one 64-wide tile covers them.
constexpr int64_t kNarrowOutputChannels = 64;

WorkloadFamily conv_family(const Partition& p, const ir::Node& n) {
  const ir::Tensor& x = p.tensor(n.inputs[slot::CONV_X]);
  const ir::Tensor& w = p.tensor(n.inputs[slot::CONV_W]);
  if (w.dims.size() < 3 || x.dims.size() < 2) return WorkloadFamily::CONV;
  if (w.dims[1] != x.dims[1]) return WorkloadFamily::CONV_GROUPED;  // filters see C / groups channels
  const auto& attr = std::get<ConvFpropAttr>(n.attr);
  const bool unit_filter = std::all_of(w.dims.begin() + 2, w.dims.end(), [](int64_t d) { return d == 1; });
  const bool unit_stride = std::all_of(attr.get_stride().begin(), attr.get_stride().end(), [](int64_t s) { return s == 1; });
  if (unit_filter && unit_stride) return WorkloadFamily::CONV_1X1;
  return w.dims[0] <= kNarrowOutputChannels ? WorkloadFamily::CONV_NARROW : WorkloadFamily::CONV;
}

WorkloadFamily family_of(const Partition& p) {
  if (p.anchor < 0) return WorkloadFamily::POINTWISE;
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
  if (is<ConvFpropAttr>(n)) return conv_family(p, n);
  if (is<ConvDgradAttr>(n)) return WorkloadFamily::CONV_DGRAD;
  if (is<ConvWgradAttr>(n)) return WorkloadFamily::CONV_WGRAD;
  if (is<MatmulAttr>(n)) return WorkloadFamily::MATMUL;
  if (is<SdpaAttr>(n)) return WorkloadFamily::SDPA;
  if (is<LayernormAttr>(n) || is<RmsnormAttr>(n) || is<BatchnormInferenceAttr>(n)) return WorkloadFamily::NORM;
  return WorkloadFamily::POINTWISE;
}

int size_rank(SizeClass s) { return static_cast<int>(s); }

}  // namespace

Precision operand_precision(const Partition& p) {
  int tensor = -1;
  if (p.anchor >= 0) {
    const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
    if (!n.inputs.empty()) tensor = n.inputs[0];
  } else if (!p.inputs.empty()) {
    tensor = p.inputs[0];
  }
  if (tensor < 0) return Precision::SINGLE;
  const DataType t = p.tensor(tensor).dtype;
  const int64_t bytes = size_of(t);
  if (t == DataType::FLOAT && p.graph->allow_tf32) return Precision::TF32;
  return bytes <= 1 ? Precision::BYTE : bytes == 2 ? Precision::HALF : Precision::SINGLE;
}

std::string_view to_string(WorkloadFamily f) { return name_of(kFamilies, f); }
std::string_view to_string(SizeClass s) { return name_of(kSizes, s); }
std::string_view to_string(Precision p) { return name_of(kPrecisions, p); }
bool parse_family(std::string_view text, WorkloadFamily& f) { return value_of(kFamilies, text, f); }
bool parse_size_class(std::string_view text, SizeClass& s) { return value_of(kSizes, text, s); }
bool parse_precision(std::string_view text, Precision& p) { return value_of(kPrecisions, text, p); }

SizeClass size_class_of(double ideal_seconds) {
  if (ideal_seconds < 2e-6) return SizeClass::UNDER_2US;
  if (ideal_seconds < 20e-6) return SizeClass::UNDER_20US;
  if (ideal_seconds < 200e-6) return SizeClass::UNDER_200US;
  return SizeClass::LARGER;
}

WorkloadClass classify(const Partition& p, const DeviceInfo& info) {
  const double ideal = roofline_seconds(partition_flops(p), partition_bytes(p), info, 1.0, 0.0);
  return {family_of(p), size_class_of(ideal), operand_precision(p)};
}

std::string calibration_device(const DeviceInfo& info) {
  return info.sm_version > 0 ? "sm_" + std::to_string(info.sm_version) : "cpu";
}

const std::vector<CalibrationEntry>& calibration_table() {
  static const std::vector<CalibrationEntry> table = {
#include "planning/calibration_table.inc"
  };
  return table;
}

Calibration calibration_for(const std::vector<CalibrationEntry>& table, std::string_view device,
                            std::string_view engine, WorkloadClass c) {
  Calibration best;
  int best_distance = 1 << 30;
  for (const CalibrationEntry& e : table) {
    if (e.family != c.family || e.precision != c.precision || device != e.device || engine != e.engine) continue;
    const int distance = std::abs(size_rank(e.size) - size_rank(c.size));
    // On a tie between a smaller and a larger class, the larger one: it was measured further from
    // the launch-bound regime, where ratios swing most.
    if (distance < best_distance || (distance == best_distance && best.entry && e.size > best.entry->size)) {
      best_distance = distance;
      best = {e.factor, &e, distance == 0};
    }
  }
  return best;
}

}  // namespace dnngraph
