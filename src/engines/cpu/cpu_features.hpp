// Run-time CPU feature detection: which kernel ISA this machine can run, and its cache sizes
// (the GEMM blocking is derived from them). Read once, immutable afterwards.
#pragma once
#include <cstdint>
#include <string>

namespace dnngraph::cpu {

// Kernel instruction-set levels, lowest first. Values are stable: they are the "isa" knob.
enum class Isa : int {
  PORTABLE = 0,  // plain C++ (compiler vector extensions); any CPU
  AVX2 = 1,      // AVX2 + FMA + F16C
  AVX512 = 2,    // AVX-512 F (+ the AVX2 level)
};

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avx512f = false;
  bool avx512bf16 = false;  // vdpbf16ps: the GEMM's bf16-pair kernels (with AVX-512 F)
  bool amx_bf16 = false;    // AMX tiles + TDPBF16PS, their state saved by the OS (XCR0 bits 17-18)
  int64_t l1d_bytes = 32 << 10;  // per core
  int64_t l1d_ways = 8;          // its associativity: addresses l1d_bytes / l1d_ways apart share a set
  int64_t l2_bytes = 512 << 10;  // per core
  int64_t l3_bytes = 8 << 20;    // shared
  Isa best() const;
  bool supports(Isa isa) const;
  // Whether `rows` rows `stride_bytes` apart, read one line each per step, crowd one L1 set: they
  // meet in a set every way's span (l1d_bytes / l1d_ways, 4 KiB on x86), and more than half the
  // ways of them evict each other between steps.
  bool rows_crowd_l1(int64_t stride_bytes, int64_t rows) const;
  std::string to_string() const;  // "avx2 fma f16c, L1d 32 KiB 8-way, L2 512 KiB, L3 32 MiB"
};

// Cache sizes and L1's ways from Linux's sysfs view of cpu0 (`dir` holds index0, index1, ...:
// level, type, size as "32K", ways_of_associativity): what the kernel read from the CPU, where
// glibc's sysconf computes L3 itself (320 MiB for the 32 MiB L3 of a 2-vCPU EPYC guest). Fields
// sysfs does not give keep their values; false when `dir` has no cache entry.
bool read_sysfs_caches(const std::string& dir, CpuFeatures& f);

// The machine's features, capped by DNNGRAPH_MAX_CPU_ISA ("avx2" or "portable", any case; unset or
// "avx512": no cap) as oneDNN's ONEDNN_MAX_CPU_ISA caps it: to run and compare the lower kernel levels on a
// machine that has the higher ones.
const CpuFeatures& cpu_features();
// `f` with every feature above `cap` cleared: "avx2" clears the AVX-512 ones (AMX and the bf16 dot
// products too), "portable" every SIMD one (any case); anything else leaves `f` as it is.
CpuFeatures capped(CpuFeatures f, const char* cap);
const char* isa_name(Isa isa);

// This thread's CPU time in seconds: the clock of the kernels' one-off rate measurements (other
// threads and processes on the core do not count against the kernel timed).
double thread_cpu_seconds();  // "portable", "avx2", "avx512"

}  // namespace dnngraph::cpu
