// Walking a linear range of a row-major index space in runs along its last dim: the loop shape of
// every CPU engine here that feeds the epilogue executor strips.
#pragma once
#include <algorithm>
#include <cstdint>

namespace dnngraph::cpu {

// Calls fn(coord, len) for consecutive runs covering elements [lo, hi) of `dims` (rank >= 1, row
// major): each run stays inside the last dim and holds at most max_len elements; coord (rank
// values) is the run's first element.
template <class Fn>
void for_each_run(const int64_t* dims, int rank, int64_t lo, int64_t hi, int64_t max_len, Fn&& fn) {
  int64_t c[16];
  int64_t rest = lo;
  for (int d = rank; d-- > 0;) {
    c[d] = rest % dims[d];
    rest /= dims[d];
  }
  const int last = rank - 1;
  for (int64_t pos = lo; pos < hi;) {
    const int64_t len = std::min({hi - pos, dims[last] - c[last], max_len});
    fn(static_cast<const int64_t*>(c), len);
    pos += len;
    c[last] += len;
    for (int d = last; d > 0 && c[d] >= dims[d]; --d) {  // carry into the outer dims
      c[d] = 0;
      ++c[d - 1];
    }
  }
}

}  // namespace dnngraph::cpu
