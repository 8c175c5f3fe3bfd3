// Enumerations of the public API. Names and values follow the cuDNN frontend graph API.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "dnngraph/export.hpp"

DNNGRAPH_API_BEGIN
namespace dnngraph {

enum class DataType : int {
  NOT_SET = 0,
  FLOAT,
  HALF,
  BFLOAT16,
  DOUBLE,
  INT8,
  INT32,
  INT64,
  BOOLEAN,
  UINT8,
  FP8_E4M3,
  FP8_E5M2,
};

// The rows of dnngraph/pointwise_modes.def, in order.
enum class PointwiseMode : int {
  NOT_SET = 0,
#define DG_POINTWISE_MODE(mode, inputs, kind, python, kw0, kw1) mode,
#include "dnngraph/pointwise_modes.def"
#undef DG_POINTWISE_MODE
};

// What a pointwise mode computes, as pointwise_modes.def classes it.
enum class PointwiseKind : int {
  ARITHMETIC, MATH, ACTIVATION, ACTIVATION_BACKWARD, COMPARISON, LOGICAL, INDEX, SELECT,
};

enum class ReductionMode : int { NOT_SET = 0, ADD, MUL, MIN, MAX, AMAX, AVG, NORM1, NORM2 };

enum class ResampleMode : int {
  NOT_SET = 0,
  MAXPOOL,
  AVGPOOL_INCLUDE_PADDING,
  AVGPOOL_EXCLUDE_PADDING,
  NEAREST,
  BILINEAR,
};

enum class NormFwdPhase : int { NOT_SET = 0, INFERENCE, TRAINING };
enum class DiagonalAlignment : int { TOP_LEFT = 0, BOTTOM_RIGHT };
enum class HeurMode : int { A = 0, B, FALLBACK };
enum class BuildPlanPolicy : int { HEURISTICS_CHOICE = 0, ALL };

// Size in bytes of one element; 0 for NOT_SET.
int64_t size_of(DataType t);
bool is_floating(DataType t);
bool is_integral(DataType t);  // INT8, UINT8, INT32, INT64, BOOLEAN
int arity(PointwiseMode m);    // number of tensor inputs: 1, 2 or 3 (0 for NOT_SET and unknown values)
PointwiseKind kind_of(PointwiseMode m);
bool has_boolean_result(PointwiseMode m);  // COMPARISON and LOGICAL modes

std::string_view to_string(DataType t);
std::string_view to_string(PointwiseMode m);
std::string_view to_string(ReductionMode m);
std::string_view to_string(ResampleMode m);
std::string_view to_string(NormFwdPhase p);
std::string_view to_string(DiagonalAlignment a);
std::string_view to_string(HeurMode m);

std::optional<DataType> data_type_from_string(std::string_view s);
std::optional<PointwiseMode> pointwise_mode_from_string(std::string_view s);
std::optional<ReductionMode> reduction_mode_from_string(std::string_view s);
std::optional<ResampleMode> resample_mode_from_string(std::string_view s);
std::optional<NormFwdPhase> norm_fwd_phase_from_string(std::string_view s);
std::optional<DiagonalAlignment> diagonal_alignment_from_string(std::string_view s);

}  // namespace dnngraph
DNNGRAPH_API_END
