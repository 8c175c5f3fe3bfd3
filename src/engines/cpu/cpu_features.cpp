#include "engines/cpu/cpu_features.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <climits>
#include <ctime>
#include <fstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define DNNGRAPH_X86 1
#endif

namespace dnngraph::cpu {
namespace {

#ifdef DNNGRAPH_X86
// XCR0: which register states the OS saves on context switches (AVX needs YMM, AVX-512 ZMM too).
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

void detect_isa(CpuFeatures& f) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  const bool osxsave = (c >> 27) & 1u;
  const bool avx = (c >> 28) & 1u;
  f.fma = (c >> 12) & 1u;
  f.f16c = (c >> 29) & 1u;
  if (!osxsave || !avx) return;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_saved = (xcr0 & 0x6u) == 0x6u;
  const bool zmm_saved = (xcr0 & 0xe6u) == 0xe6u;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  f.avx2 = ymm_saved && ((b >> 5) & 1u);
  f.avx512f = zmm_saved && ((b >> 16) & 1u);
  f.amx_bf16 = f.avx512f && ((d >> 22) & 1u) && ((d >> 24) & 1u) && (xcr0 & 0x60000u) == 0x60000u;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = f.avx512f && ((a >> 5) & 1u);
}
#else
void detect_isa(CpuFeatures&) {}
#endif

// A sysfs attribute's first line; empty when absent.
std::string sysfs_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32768K" / "1M" / "512" as bytes; 0 when it is not a size.
int64_t sysfs_bytes(const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || v <= 0) return 0;
  const int64_t unit = *end == 'K' ? 1 << 10 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
  return v > INT64_MAX / unit ? 0 : static_cast<int64_t>(v) * unit;
}

void detect_caches(CpuFeatures& f) {
  if (read_sysfs_caches("/sys/devices/system/cpu/cpu0/cache", f)) return;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (long v = sysconf(_SC_LEVEL1_DCACHE_SIZE); v > 0) f.l1d_bytes = v;
  if (long v = sysconf(_SC_LEVEL1_DCACHE_ASSOC); v > 0) f.l1d_ways = v;
  if (long v = sysconf(_SC_LEVEL2_CACHE_SIZE); v > 0) f.l2_bytes = v;
  if (long v = sysconf(_SC_LEVEL3_CACHE_SIZE); v > 0) f.l3_bytes = v;
#endif
}

std::string kib(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

bool read_sysfs_caches(const std::string& dir, CpuFeatures& f) {
  bool found = false;
  for (int i = 0; i < 16; ++i) {
    const std::string index = dir + "/index" + std::to_string(i) + "/";
    const std::string level = sysfs_line(index + "level"), type = sysfs_line(index + "type");
    const int64_t bytes = sysfs_bytes(sysfs_line(index + "size"));
    if (level.empty() || bytes == 0) continue;
    found = true;
    if (level == "1" && type == "Data") {
      f.l1d_bytes = bytes;
      if (const int64_t ways = std::atoll(sysfs_line(index + "ways_of_associativity").c_str()); ways > 0) f.l1d_ways = ways;
    } else if (level == "2" && type != "Instruction") {
      f.l2_bytes = bytes;
    } else if (level == "3" && type != "Instruction") {
      f.l3_bytes = bytes;
    }
  }
  return found;
}

bool CpuFeatures::supports(Isa isa) const {
  switch (isa) {
    case Isa::PORTABLE: return true;
    case Isa::AVX2: return avx2 && fma && f16c;
    case Isa::AVX512: return supports(Isa::AVX2) && avx512f;
  }
  return false;
}

Isa CpuFeatures::best() const {
  if (supports(Isa::AVX512)) return Isa::AVX512;
  if (supports(Isa::AVX2)) return Isa::AVX2;
  return Isa::PORTABLE;
}

bool CpuFeatures::rows_crowd_l1(int64_t stride_bytes, int64_t rows) const {
  if (stride_bytes == 0) return false;  // one row, read again: one line
  const int64_t span = std::max<int64_t>(l1d_bytes / std::max<int64_t>(l1d_ways, 1), 64);
  int64_t same = 0;
  for (int64_t i = 0; i < rows; ++i) same += (i * std::abs(stride_bytes)) % span < 64;
  return 2 * same > l1d_ways;
}

std::string CpuFeatures::to_string() const {
  std::string s;
  for (auto [on, name] : {std::pair{avx2, "avx2"}, {fma, "fma"}, {f16c, "f16c"}, {avx512f, "avx512f"},
                            {avx512bf16, "avx512_bf16"}, {amx_bf16, "amx_bf16"}})
    if (on) s += std::string(s.empty() ? "" : " ") + name;
  if (s.empty()) s = "no simd extensions";
  return s + ", L1d " + kib(l1d_bytes) + " " + std::to_string(l1d_ways) + "-way, L2 " + kib(l2_bytes) + ", L3 " +
         kib(l3_bytes);
}

CpuFeatures capped(CpuFeatures f, const char* cap) {
  std::string level = cap ? cap : "";
  std::transform(level.begin(), level.end(), level.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (level == "avx2" || level == "portable") f.avx512f = f.avx512bf16 = f.amx_bf16 = false;
  if (level == "portable") f.avx2 = f.fma = f.f16c = false;
  return f;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures kFeatures = [] {
    CpuFeatures f;
    detect_isa(f);
    detect_caches(f);
    return capped(f, std::getenv("DNNGRAPH_MAX_CPU_ISA"));
  }();
  return kFeatures;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::PORTABLE: return "portable";
    case Isa::AVX2: return "avx2";
    case Isa::AVX512: return "avx512";
  }
  return "unknown";
}

}  // namespace dnngraph::cpu
