// The portable dot-product tile, 4 pixels x 2 output channels over simd::VecPortable, and the
// ISA dispatch.
#include <algorithm>
#include <array>
#include <vector>

#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/vec_portable.hpp"

namespace dnngraph::cpu::conv_dot {
namespace {
inline float hsum(simd::VecPortable::Reg v) { return (v[0] + v[1]) + (v[2] + v[3]); }
template <int N>
inline void lane_sums(const simd::VecPortable::Reg* acc, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = hsum(acc[i]);
}
}  // namespace
}  // namespace dnngraph::cpu::conv_dot
#include "engines/cpu/conv/conv_dot_kernel_body.inl"

namespace dnngraph::cpu::conv_dot {
namespace {
constexpr DotKernelSet kPortable{Isa::PORTABLE, 4, 2, 4, dot_tile<simd::VecPortable, 4, 2>, {0.82, 64.0, 6.4}};
}  // namespace

const DotKernelSet& portable_dot_kernels() { return kPortable; }

const DotKernelSet& dot_kernels(Isa isa) {
  return simd::table_for(isa, portable_dot_kernels(), avx2_dot_kernels(), avx512_dot_kernels());
}

namespace {

// Seconds of per-thread CPU time per FLOP of 2000 calls of `ks`'s tile over one tap of 256
// channels, L1-resident (~0.3 ms for AVX-512's).
double hot_seconds(const DotKernelSet& ks) {
  constexpr int64_t cn = 256, reps = 2000;
  std::vector<float> x(static_cast<size_t>(ks.np * cn), 0.5f), w(static_cast<size_t>(ks.no * cn), 0.25f);
  std::vector<float> acc(static_cast<size_t>(ks.np * ks.no * ks.width)), out(static_cast<size_t>(ks.np * ks.no));
  std::vector<const float*> xp(static_cast<size_t>(ks.np)), wp(static_cast<size_t>(ks.no));
  std::vector<float*> op(static_cast<size_t>(ks.np));
  for (int p = 0; p < ks.np; ++p) {
    xp[static_cast<size_t>(p)] = x.data() + p * cn;
    op[static_cast<size_t>(p)] = out.data() + p * ks.no;
  }
  for (int o = 0; o < ks.no; ++o) wp[static_cast<size_t>(o)] = w.data() + o * cn;
  const int64_t wtap = 0;
  DotArgs a{};
  a.x = xp.data();
  a.ntaps = 1;
  a.t1 = 1;
  a.cn = cn;
  a.w = wp.data();
  a.wtap = &wtap;
  a.acc = acc.data();
  a.out = op.data();
  a.np = ks.np;
  a.no = ks.no;
  const double t0 = thread_cpu_seconds();
  for (int64_t r = 0; r < reps; ++r) {
    a.first = r == 0;
    ks.kernel(a);
  }
  return std::max(thread_cpu_seconds() - t0, 1e-9) / (2.0 * static_cast<double>(ks.np * ks.no * cn * reps));
}

}  // namespace

double relative_rate(Isa isa) {
  static const std::array<double, 3> kRates = [] {
    // Five rounds, the levels timed back to back in each and the rates taken relative to that
    // round's fastest; per level the median round. Another process's burst (a library's threads
    // spinning on the other hyperthread after their parallel region) then moves one round, not
    // the answer. A level this machine or build lacks runs the level below: its rate.
    constexpr int kRounds = 5;
    std::array<std::array<double, kRounds>, 3> rounds{};
    for (int round = 0; round < kRounds; ++round) {
      std::array<double, 3> r{};
      for (Isa level : {Isa::PORTABLE, Isa::AVX2, Isa::AVX512}) {
        const DotKernelSet& ks = dot_kernels(level);
        if (cpu_features().supports(level) && ks.isa == level) r[static_cast<size_t>(level)] = 1.0 / hot_seconds(ks);
      }
      const double top = std::max({r[0], r[1], r[2], 1e-30});
      for (size_t l = 0; l < 3; ++l) rounds[l][static_cast<size_t>(round)] = r[l] / top;
    }
    std::array<double, 3> out{};
    for (size_t l = 0; l < 3; ++l) {
      std::nth_element(rounds[l].begin(), rounds[l].begin() + kRounds / 2, rounds[l].end());
      const double median = rounds[l][kRounds / 2];
      // Within 5% of the fastest counts as the fastest: near-ties go to the higher level, which
      // the candidates list first.
      out[l] = median >= 0.95 ? 1.0 : median;
    }
    return out;
  }();
  return kRates[static_cast<size_t>(dot_kernels(isa).isa)];
}

}  // namespace dnngraph::cpu::conv_dot
