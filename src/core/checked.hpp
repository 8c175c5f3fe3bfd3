// Checked arithmetic for shapes, strides, spans, offsets and sizes. Every product or sum that a
// user's numbers reach goes through these, so an overflow is an error, never a wrapped value.
//
// The limits are what every engine can index: a tensor of at most 2^48 elements spanning at most
// 2^48 bytes (256 TiB, beyond any device's memory), strides and per-dim values below 2^48, rank
// at most 16. Validation enforces them on every tensor, so sums and products of a few such
// values in int64 cannot overflow; larger derived sizes (workspaces) use these helpers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dnngraph::checked {

inline constexpr int64_t kMaxElements = int64_t{1} << 48;
inline constexpr int64_t kMaxSpanBytes = int64_t{1} << 48;
inline constexpr int64_t kMaxExtent = int64_t{1} << 48;  // any dim, stride, padding, ...
inline constexpr int kMaxRank = 16;

inline bool mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool add(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }
inline bool sub(int64_t a, int64_t b, int64_t& out) { return !__builtin_sub_overflow(a, b, &out); }

// a * b + c.
inline bool mul_add(int64_t a, int64_t b, int64_t c, int64_t& out) {
  int64_t p = 0;
  return mul(a, b, p) && add(p, c, out);
}

// The product of dims (1 for none); false on overflow.
inline bool volume(const std::vector<int64_t>& dims, int64_t& out) {
  out = 1;
  for (int64_t d : dims)
    if (!mul(out, d, out)) return false;
  return true;
}

// The largest element offset reached, sum of (dim - 1) * stride over dims >= 1 and strides >= 0;
// false on overflow or on mismatched ranks.
inline bool max_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t& out) {
  out = 0;
  if (dims.size() != strides.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!mul_add(dims[i] - 1, strides[i], out, out)) return false;
  return true;
}

// Bytes from the base pointer to the end of the last element: (max offset + 1) * element size.
inline bool span_bytes(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t element_size,
                       int64_t& out) {
  int64_t last = 0, count = 0;
  return max_offset(dims, strides, last) && add(last, 1, count) && mul(count, element_size, out);
}

}  // namespace dnngraph::checked
