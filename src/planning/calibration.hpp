// Mode A's cost model corrected by measurement. An engine's estimate_seconds is a roofline with an
// efficiency guessed by its author; bench/default_plan.cpp times each engine's first candidate on
// the workloads of bench/ and records measured / estimated per device, engine and workload class.
// Those ratios ship with the library (calibration_table.inc) and mode A ranks by estimate x ratio,
// so engines are compared by what they measured, not by what their authors hoped.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "fusion/partition.hpp"
#include "runtime/device_info.hpp"

namespace dnngraph {

// What a partition is built around, coarsely: engines' efficiency differs most between these.
// CONV_NARROW: a gathering conv of at most 64 output channels, where every engine runs 64-wide
// tiles and cuDNN's speed against its roofline differs from the wider layers' (RN50 C64 56² 1.22
// against 0.90-0.98 for C128-C512 on an H100, 2026-12-06), so one class-wide factor misranked them.
enum class WorkloadFamily {
  CONV, CONV_NARROW, CONV_1X1, CONV_GROUPED, CONV_DGRAD, CONV_WGRAD, MATMUL, SDPA, NORM, POINTWISE };
// The partition's ideal time on the device (its roofline at peak): launch-bound work and large
// work reach very different fractions of a roofline.
enum class SizeClass { UNDER_2US, UNDER_20US, UNDER_200US, LARGER };
// The anchor's operand width: engines' efficiency at fp32 (CUDA cores, TF32, a runtime-fused fp32
// kernel) says nothing about theirs at bf16, so ratios are measured and looked up per width.
// FLOAT operands that the graph lets round to TF32 (set_allow_tf32) are their own class: tensor
// cores at TF32's rate, against CUDA cores for exact fp32.
enum class Precision { HALF, SINGLE, BYTE, TF32 };  // fp16/bf16; fp32/fp64; int8/fp8; FLOAT as TF32

struct WorkloadClass {
  WorkloadFamily family = WorkloadFamily::POINTWISE;
  SizeClass size = SizeClass::LARGER;
  Precision precision = Precision::HALF;
  bool operator==(const WorkloadClass&) const = default;
};

std::string_view to_string(WorkloadFamily f);
std::string_view to_string(SizeClass s);
std::string_view to_string(Precision p);
bool parse_family(std::string_view text, WorkloadFamily& f);
bool parse_size_class(std::string_view text, SizeClass& s);
bool parse_precision(std::string_view text, Precision& p);

WorkloadClass classify(const Partition& p, const DeviceInfo& info);
// The width of the anchor's first operand (a pointwise partition's first input).
Precision operand_precision(const Partition& p);
SizeClass size_class_of(double ideal_seconds);
// "sm_90" on a CUDA device, "cpu" on the CPU: the table's device key.
std::string calibration_device(const DeviceInfo& info);

// One measured ratio: on `device`, `engine`'s first candidate took `factor` times its estimate
// (the largest over `samples` workloads of this class: bench/calibrate.py says why).
struct CalibrationEntry {
  const char* device;
  const char* engine;
  WorkloadFamily family;
  SizeClass size;
  Precision precision;
  double factor;
  int samples;
};

// The shipped table (calibration_table.inc), in no particular order.
const std::vector<CalibrationEntry>& calibration_table();

struct Calibration {
  double factor = 1.0;
  const CalibrationEntry* entry = nullptr;  // null: no measurement, the estimate is used as it is
  bool exact = false;                       // the entry is of this very class (else the nearest size)
};

// The ratio for `engine` on this class: the entry of the same family, precision and size, else the
// same family and precision's nearest size class, else none (factor 1).
Calibration calibration_for(const std::vector<CalibrationEntry>& table, std::string_view device,
                            std::string_view engine, WorkloadClass c);

}  // namespace dnngraph
