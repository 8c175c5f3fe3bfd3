#include "core/dtype.hpp"

#include <algorithm>

namespace dnngraph::dtype {

namespace {
template <class T>
T saturate_round(double v) {
  if (std::isnan(v)) return T(0);
  const double r = std::nearbyint(v);
  const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  const double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (r <= lo) return std::numeric_limits<T>::lowest();
  if (r >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}
}  // namespace

double load(const void* base, DataType t, int64_t i) {
  switch (t) {
    case DataType::FLOAT: return static_cast<const float*>(base)[i];
    case DataType::DOUBLE: return static_cast<const double*>(base)[i];
    case DataType::HALF: return decode(static_cast<const uint16_t*>(base)[i], kHalf);
    case DataType::BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DataType::FP8_E4M3: return decode(static_cast<const uint8_t*>(base)[i], kE4M3);
    case DataType::FP8_E5M2: return decode(static_cast<const uint8_t*>(base)[i], kE5M2);
    case DataType::INT8: return static_cast<const int8_t*>(base)[i];
    case DataType::UINT8: return static_cast<const uint8_t*>(base)[i];
    case DataType::INT32: return static_cast<const int32_t*>(base)[i];
    case DataType::INT64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DataType::BOOLEAN: return static_cast<const uint8_t*>(base)[i] ? 1.0 : 0.0;
    case DataType::NOT_SET: break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void store(void* base, DataType t, int64_t i, double v) {
  switch (t) {
    case DataType::FLOAT: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DataType::DOUBLE: static_cast<double*>(base)[i] = v; return;
    case DataType::HALF: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(encode(v, kHalf)); return;
    case DataType::BFLOAT16: static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(encode(v, kBf16)); return;
    case DataType::FP8_E4M3: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(encode(v, kE4M3)); return;
    case DataType::FP8_E5M2: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(encode(v, kE5M2)); return;
    case DataType::INT8: static_cast<int8_t*>(base)[i] = saturate_round<int8_t>(v); return;
    case DataType::UINT8: static_cast<uint8_t*>(base)[i] = saturate_round<uint8_t>(v); return;
    case DataType::INT32: static_cast<int32_t*>(base)[i] = saturate_round<int32_t>(v); return;
    case DataType::INT64: static_cast<int64_t*>(base)[i] = saturate_round<int64_t>(v); return;
    case DataType::BOOLEAN: static_cast<uint8_t*>(base)[i] = (v != 0.0) ? 1 : 0; return;
    case DataType::NOT_SET: return;
  }
}

double round_to(DataType t, double v) {
  alignas(8) unsigned char buf[8];
  store(buf, t, 0, v);
  return load(buf, t, 0);
}

}  // namespace dnngraph::dtype
