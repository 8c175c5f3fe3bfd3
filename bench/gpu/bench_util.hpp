// What the GPU benchmarks share: dims and stride layouts, seeded device tensors, and error checks
// that print (a benchmark reports a failed workload and goes on) or stop the program.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../../tests/common/dims.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "runtime/memory.hpp"

namespace gpu_bench {

namespace dg = dnngraph;

// The tests' dims and stride layouts (packed row-major, channels-last) and element counts.
using test_dims::channels_last;
using test_dims::Dims;
using test_dims::packed;
using test_dims::volume;

// Seeded values in [-1.5, 1.5) as bf16 bits, hashed per index: cheap enough for hundreds of
// millions of elements (the attention benches' operands).
inline std::vector<uint16_t> random_bf16(int64_t n, uint64_t seed) {
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    v[static_cast<size_t>(i)] = dg::dtype::float_to_bf16(static_cast<float>((x >> 40) * 0x1p-24 * 3.0 - 1.5));
  }
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

// The benches' common options: --repeats N (at least 1) and --case NAME (only the cases whose
// names contain NAME). True when argv[i] was one of them (i then points at its value).
inline bool repeats_or_case(int argc, char** argv, int& i, int& repeats, std::string& only) {
  const std::string a = argv[i];
  if (a == "--repeats" && i + 1 < argc) repeats = std::max(1, std::atoi(argv[++i]));
  else if (a == "--case" && i + 1 < argc) only = argv[++i];
  else return false;
  return true;
}

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
