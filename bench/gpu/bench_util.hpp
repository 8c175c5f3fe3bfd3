// What the GPU benchmarks share: dims and stride layouts, seeded device tensors, and error checks
// that print (a benchmark reports a failed workload and goes on) or stop the program.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "runtime/memory.hpp"

namespace gpu_bench {

namespace dg = dnngraph;
using Dims = std::vector<int64_t>;

inline Dims packed(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

// Channels innermost, then the spatial dims, then N: NHWC for N, C, H, W dims.
inline Dims channels_last(const Dims& d) {
  Dims s(d.size());
  int64_t running = d[1];
  s[1] = 1;
  for (size_t i = d.size(); i-- > 2;) {
    s[i] = running;
    running *= d[i];
  }
  s[0] = running;
  return s;
}

inline int64_t volume(const Dims& d) {
  int64_t v = 1;
  for (int64_t x : d) v *= x;
  return v;
}

// A device buffer of random values of type t in [-1, 1).
struct DeviceTensor {
  dg::memory::Buffer buf;
  DeviceTensor(dg::HandleImpl& h, int64_t elems, dg::DataType t, uint32_t seed)
      : buf(h, static_cast<size_t>(elems * dg::size_of(t))) {
    std::vector<uint8_t> host(buf.size());
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < elems; ++i) dg::dtype::store(host.data(), t, i, u(rng));
    if (!dg::memory::copy_to_device(h, buf.get(), host.data(), host.size()).ok()) std::printf("ERROR copy\n");
  }
};

// Prints "ERROR <what>: <status>" when `s` failed; true when it did not.
inline bool check(const dg::Status& s, const std::string& what) {
  if (!s.ok()) std::printf("ERROR %s: %s\n", what.c_str(), s.to_string().c_str());
  return s.ok();
}

// Stops the benchmark `program` with the status when `s` failed.
inline void ok_or_exit(const char* program, const dg::Status& s, const std::string& what) {
  if (s.ok()) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, what.c_str(), s.to_string().c_str());
  std::exit(1);
}

}  // namespace gpu_bench
