// The portable dot-product tile, 4 pixels x 2 output channels over simd::VecPortable, and the
// ISA dispatch.
#include <algorithm>
#include <array>
#include <ctime>
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

// FLOP/s of `ks`'s tile over one tap of 256 channels, L1-resident, per thread CPU second (best
// of three runs of 400 calls: ~1 ms a set).
double hot_rate(const DotKernelSet& ks) {
  constexpr int64_t cn = 256, reps = 400;
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
  a.zeros = nullptr;
  a.ntaps = 1;
  a.t1 = 1;
  a.cn = cn;
  a.w = wp.data();
  a.wtap = &wtap;
  a.acc = acc.data();
  a.out = op.data();
  a.np = ks.np;
  a.no = ks.no;
  auto now = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const double t0 = now();
    for (int64_t r = 0; r < reps; ++r) {
      a.first = r == 0;
      ks.kernel(a);
    }
    const double s = now() - t0;
    if (s > 0) best = std::max(best, 2.0 * static_cast<double>(ks.np * ks.no * cn * reps) / s);
  }
  return best;
}

}  // namespace

double relative_rate(Isa isa) {
  static const std::array<double, 3> kRates = [] {
    std::array<double, 3> r{};
    for (Isa level : {Isa::PORTABLE, Isa::AVX2, Isa::AVX512}) {
      const DotKernelSet& ks = dot_kernels(level);
      // A level this machine or build lacks runs the level below: the same rate.
      r[static_cast<size_t>(level)] = cpu_features().supports(level) && ks.isa == level ? hot_rate(ks) : 0.0;
    }
    const double top = std::max({r[0], r[1], r[2], 1e-30});
    for (double& v : r) v /= top;
    return r;
  }();
  const DotKernelSet& ks = dot_kernels(isa);
  return kRates[static_cast<size_t>(ks.isa)];
}

}  // namespace dnngraph::cpu::conv_dot
