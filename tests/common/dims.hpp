// Dims and stride layouts the tests build tensors from: packed row-major, channels-last,
// column-major matrices, and the row-major index arithmetic that reads them back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace test_dims {

using Dims = std::vector<int64_t>;

inline int64_t volume(const Dims& dims) {
  int64_t v = 1;
  for (int64_t d : dims) v *= d;
  return v;
}

// Row-major packed strides: the last dim innermost.
inline Dims packed(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

// Channels innermost, then the spatial dims, then N (NHWC for rank 4) of N, C, spatial... dims.
inline Dims channels_last(const Dims& d) {
  Dims s(d.size());
  int64_t run = 1;
  s[1] = run;
  run *= d[1];
  for (size_t i = d.size(); i-- > 2;) {
    s[i] = run;
    run *= d[i];
  }
  s[0] = run;
  return s;
}

// Packed strides with the last two dims swapped in memory: each matrix column-major.
inline Dims column_major(const Dims& d) {
  const size_t r = d.size();
  Dims s(r);
  s[r - 2] = 1;
  s[r - 1] = d[r - 2];
  int64_t run = d[r - 2] * d[r - 1];
  for (size_t i = r - 2; i-- > 0;) {
    s[i] = run;
    run *= d[i];
  }
  return s;
}

// Row-major multi-index of linear index `lin`.
inline Dims unravel(int64_t lin, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    idx[i] = lin % dims[i];
    lin /= dims[i];
  }
  return idx;
}

// Row-major linear index of multi-index `idx` (the inverse of unravel).
inline int64_t ravel(const Dims& idx, const Dims& dims) {
  int64_t n = 0;
  for (size_t i = 0; i < dims.size(); ++i) n = n * dims[i] + idx[i];
  return n;
}

// "[2,3,4]".
inline std::string to_str(const Dims& d) {
  std::string r = "[";
  for (size_t i = 0; i < d.size(); ++i) r += (i ? "," : "") + std::to_string(d[i]);
  return r + "]";
}

}  // namespace test_dims
