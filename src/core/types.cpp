// Names of the public enums, as tables: one place to read and extend.
#include <array>
#include <iterator>
#include <utility>

#include "dnngraph/status.hpp"
#include "dnngraph/types.hpp"

namespace dnngraph {
namespace {

template <class E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<DataType, 12> kDataTypes{{
    {DataType::NOT_SET, "NOT_SET"}, {DataType::FLOAT, "FLOAT"}, {DataType::HALF, "HALF"},
    {DataType::BFLOAT16, "BFLOAT16"}, {DataType::DOUBLE, "DOUBLE"}, {DataType::INT8, "INT8"},
    {DataType::INT32, "INT32"}, {DataType::INT64, "INT64"}, {DataType::BOOLEAN, "BOOLEAN"},
    {DataType::UINT8, "UINT8"}, {DataType::FP8_E4M3, "FP8_E4M3"}, {DataType::FP8_E5M2, "FP8_E5M2"},
}};

struct PointwiseModeRow {
  PointwiseMode mode;
  std::string_view name;
  int inputs;
  PointwiseKind kind;
};
constexpr PointwiseModeRow kPointwiseRows[] = {
    {PointwiseMode::NOT_SET, "NOT_SET", 0, PointwiseKind::MATH},
#define DG_POINTWISE_MODE(mode, inputs, kind, python, kw0, kw1) \
  {PointwiseMode::mode, #mode, inputs, PointwiseKind::kind},
#include "dnngraph/pointwise_modes.def"
#undef DG_POINTWISE_MODE
};

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < std::size(kPointwiseRows); ++i)
    if (static_cast<size_t>(kPointwiseRows[i].mode) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kPointwiseRows must be indexable by PointwiseMode");

// The row of a mode: rows are in enum order, so the value indexes them.
const PointwiseModeRow* pointwise_row(PointwiseMode m) {
  const auto i = static_cast<size_t>(m);
  return m != PointwiseMode::NOT_SET && i < std::size(kPointwiseRows) ? &kPointwiseRows[i] : nullptr;
}

constexpr auto kPointwiseModes = [] {
  NameTable<PointwiseMode, std::size(kPointwiseRows)> t{};
  for (size_t i = 0; i < t.size(); ++i) t[i] = {kPointwiseRows[i].mode, kPointwiseRows[i].name};
  return t;
}();

constexpr NameTable<ReductionMode, 9> kReductionModes{{
    {ReductionMode::NOT_SET, "NOT_SET"}, {ReductionMode::ADD, "ADD"}, {ReductionMode::MUL, "MUL"},
    {ReductionMode::MIN, "MIN"}, {ReductionMode::MAX, "MAX"}, {ReductionMode::AMAX, "AMAX"},
    {ReductionMode::AVG, "AVG"}, {ReductionMode::NORM1, "NORM1"}, {ReductionMode::NORM2, "NORM2"},
}};

constexpr NameTable<ResampleMode, 6> kResampleModes{{
    {ResampleMode::NOT_SET, "NOT_SET"}, {ResampleMode::MAXPOOL, "MAXPOOL"},
    {ResampleMode::AVGPOOL_INCLUDE_PADDING, "AVGPOOL_INCLUDE_PADDING"},
    {ResampleMode::AVGPOOL_EXCLUDE_PADDING, "AVGPOOL_EXCLUDE_PADDING"},
    {ResampleMode::NEAREST, "NEAREST"}, {ResampleMode::BILINEAR, "BILINEAR"},
}};

constexpr NameTable<NormFwdPhase, 3> kNormPhases{{
    {NormFwdPhase::NOT_SET, "NOT_SET"}, {NormFwdPhase::INFERENCE, "INFERENCE"}, {NormFwdPhase::TRAINING, "TRAINING"},
}};

constexpr NameTable<DiagonalAlignment, 2> kAlignments{{
    {DiagonalAlignment::TOP_LEFT, "TOP_LEFT"}, {DiagonalAlignment::BOTTOM_RIGHT, "BOTTOM_RIGHT"},
}};

constexpr NameTable<HeurMode, 3> kHeurModes{{{HeurMode::A, "A"}, {HeurMode::B, "B"}, {HeurMode::FALLBACK, "FALLBACK"}}};

constexpr NameTable<ErrorCode, 18> kErrorCodes{{
    {ErrorCode::OK, "OK"}, {ErrorCode::ATTRIBUTE_NOT_SET, "ATTRIBUTE_NOT_SET"},
    {ErrorCode::INVALID_VALUE, "INVALID_VALUE"}, {ErrorCode::SHAPE_DEDUCTION_FAILED, "SHAPE_DEDUCTION_FAILED"},
    {ErrorCode::INVALID_DATA_TYPE, "INVALID_DATA_TYPE"}, {ErrorCode::INVALID_GRAPH, "INVALID_GRAPH"},
    {ErrorCode::INVALID_VARIANT_PACK, "INVALID_VARIANT_PACK"}, {ErrorCode::WORKSPACE_TOO_SMALL, "WORKSPACE_TOO_SMALL"},
    {ErrorCode::GRAPH_NOT_SUPPORTED, "GRAPH_NOT_SUPPORTED"},
    {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "GRAPH_EXECUTION_PLAN_CREATION_FAILED"},
    {ErrorCode::GRAPH_EXECUTION_FAILED, "GRAPH_EXECUTION_FAILED"}, {ErrorCode::INVALID_CALL_ORDER, "INVALID_CALL_ORDER"},
    {ErrorCode::DEVICE_NOT_AVAILABLE, "DEVICE_NOT_AVAILABLE"}, {ErrorCode::CUDA_API_FAILED, "CUDA_API_FAILED"},
    {ErrorCode::COMPILATION_FAILED, "COMPILATION_FAILED"}, {ErrorCode::SERIALIZATION_FAILED, "SERIALIZATION_FAILED"},
    {ErrorCode::IO_ERROR, "IO_ERROR"}, {ErrorCode::INTERNAL_ERROR, "INTERNAL_ERROR"},
}};

template <class E, size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "UNKNOWN";
}

template <class E, size_t N>
std::optional<E> value_of(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [e, n] : table)
    if (n == name && n != "NOT_SET") return e;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(DataType t) { return name_of(kDataTypes, t); }
std::string_view to_string(PointwiseMode m) { return name_of(kPointwiseModes, m); }
std::string_view to_string(ReductionMode m) { return name_of(kReductionModes, m); }
std::string_view to_string(ResampleMode m) { return name_of(kResampleModes, m); }
std::string_view to_string(NormFwdPhase p) { return name_of(kNormPhases, p); }
std::string_view to_string(DiagonalAlignment a) { return name_of(kAlignments, a); }
std::string_view to_string(HeurMode m) { return name_of(kHeurModes, m); }
std::string_view to_string(ErrorCode c) { return name_of(kErrorCodes, c); }

std::optional<DataType> data_type_from_string(std::string_view s) { return value_of(kDataTypes, s); }
std::optional<PointwiseMode> pointwise_mode_from_string(std::string_view s) { return value_of(kPointwiseModes, s); }
std::optional<ReductionMode> reduction_mode_from_string(std::string_view s) { return value_of(kReductionModes, s); }
std::optional<ResampleMode> resample_mode_from_string(std::string_view s) { return value_of(kResampleModes, s); }
std::optional<NormFwdPhase> norm_fwd_phase_from_string(std::string_view s) { return value_of(kNormPhases, s); }
std::optional<DiagonalAlignment> diagonal_alignment_from_string(std::string_view s) { return value_of(kAlignments, s); }

int64_t size_of(DataType t) {
  switch (t) {
    case DataType::DOUBLE: case DataType::INT64: return 8;
    case DataType::FLOAT: case DataType::INT32: return 4;
    case DataType::HALF: case DataType::BFLOAT16: return 2;
    case DataType::INT8: case DataType::UINT8: case DataType::BOOLEAN:
    case DataType::FP8_E4M3: case DataType::FP8_E5M2: return 1;
    case DataType::NOT_SET: return 0;
  }
  return 0;
}

bool is_integral(DataType t) {
  return t == DataType::INT8 || t == DataType::UINT8 || t == DataType::INT32 || t == DataType::INT64 ||
         t == DataType::BOOLEAN;
}
bool is_floating(DataType t) { return t != DataType::NOT_SET && !is_integral(t); }

int arity(PointwiseMode m) {
  const PointwiseModeRow* r = pointwise_row(m);
  return r ? r->inputs : 0;
}
PointwiseKind kind_of(PointwiseMode m) {
  const PointwiseModeRow* r = pointwise_row(m);
  return r ? r->kind : PointwiseKind::MATH;
}
bool has_boolean_result(PointwiseMode m) {
  const PointwiseKind k = kind_of(m);
  return pointwise_row(m) && (k == PointwiseKind::COMPARISON || k == PointwiseKind::LOGICAL);
}

std::string Status::to_string() const {
  return ok() ? std::string("OK") : std::string(dnngraph::to_string(code_)) + ": " + message_;
}

}  // namespace dnngraph
