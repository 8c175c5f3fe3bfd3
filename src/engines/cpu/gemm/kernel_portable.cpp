// The portable microkernel, 4 x 8, over simd::VecPortable; the ISA dispatch and the kernels' cost
// model figure.
#include "engines/cpu/gemm/microkernel.hpp"

#include <algorithm>
#include <vector>
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/vec_portable.hpp"

#include "engines/cpu/gemm/kernel_body.inl"

namespace dnngraph::cpu::gemm {

const KernelSet& portable_kernels() { return kKernelSet<simd::VecPortable, 4>; }

const KernelSet& kernel_set(Isa isa) {
  return simd::table_for(isa, portable_kernels(), avx2_kernels(), avx512_kernels());
}

const KernelSet& row_kernel_set(Isa isa) {
  return simd::table_for(isa, kKernelSet<simd::VecPortable, 1, 4>, avx2_kernels_1x32(), avx512_kernels_1x64());
}

std::vector<const KernelSet*> kernel_shapes(Isa isa) {
  std::vector<const KernelSet*> out{&kernel_set(isa)};
  if (out[0]->isa == Isa::AVX512)
    for (const KernelSet* ks :
         {avx512_kernels_7x48(), avx512_kernels_14x32(), avx512_kernels_8x32(), avx512_kernels_16x16()})
      if (ks) out.push_back(ks);
  return out;
}

namespace {

// The shape of `shapes` that pads an M x N problem the least (kernel_for_shape).
const KernelSet& least_padding(const std::vector<const KernelSet*>& shapes, int64_t m, int64_t n, int min_nr) {
  const KernelSet* best = nullptr;
  double best_fill = 0;
  for (const KernelSet* ks : shapes) {
    if (ks->nr < min_nr && ks != shapes.front()) continue;  // the first (the ISA's default) always qualifies
    const auto pad = [](int64_t x, int64_t t) { return static_cast<double>((std::max<int64_t>(x, 1) + t - 1) / t * t); };
    const double fill = static_cast<double>(std::max<int64_t>(m, 1)) * static_cast<double>(std::max<int64_t>(n, 1)) /
                        (pad(m, ks->mr) * pad(n, ks->nr));
    // Another shape must fill 2% more to be taken, or as wide a one fill whole tiles where it does not
    // (no edge tile computed aside: what lets a conv's chain store over its residual operand).
    if (!best || fill > best_fill * 1.02 || (fill == 1.0 && best_fill < 1.0 && ks->nr == best->nr)) {
      best = ks;
      best_fill = fill;
    }
  }
  return *best;
}

}  // namespace

const KernelSet& kernel_for_shape(Isa isa, int64_t m, int64_t n, int min_nr) {
  return least_padding(kernel_shapes(isa), m, n, min_nr);
}

bool is_bf16_pairs(const KernelSet& ks) {
  static const std::vector<const KernelSet*> kShapes = bf16_pair_shapes();
  return std::find(kShapes.begin(), kShapes.end(), &ks) != kShapes.end();
}

const KernelSet& bf16_pair_kernel_for_shape(int64_t m, int64_t n) { return least_padding(bf16_pair_shapes(), m, n, 0); }

namespace {

// FLOP/s of `ks`'s packed kernel on one L1-resident 12-row tile, per thread CPU second; `pairs`:
// each K step is two products.
double hot_rate(const KernelSet& ks, bool pairs) {
  constexpr int64_t kc = 128, reps = 400;
  std::vector<float> a(static_cast<size_t>(ks.mr * kc), 0.0f), b(static_cast<size_t>(kc * ks.nr), 0.0f);
  std::vector<float> c(static_cast<size_t>(ks.mr * ks.nr), 0.0f);
  const std::vector<const float*> rows(static_cast<size_t>(ks.mr), a.data());
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const double t0 = thread_cpu_seconds();
    for (int64_t r = 0; r < reps; ++r) ks.kernel_packed(1, kc, rows.data(), b.data(), c.data(), ks.nr, r > 0);
    const double s = thread_cpu_seconds() - t0;
    if (s > 0) best = std::max(best, (pairs ? 4.0 : 2.0) * ks.mr * ks.nr * kc * reps / s);
  }
  return best;
}

}  // namespace

bool bf16_pairs_faster() {
  static const bool kFaster = [] {
    const KernelSet* pairs = avx512_bf16_kernels();
    if (!pairs || !cpu_features().avx512bf16 || !cpu_features().supports(Isa::AVX512)) return false;
    return hot_rate(*pairs, true) > 1.1 * hot_rate(kernel_set(Isa::AVX512), false);
  }();
  return kFaster;
}

double kernel_efficiency(Isa isa) {
  switch (isa) {
    case Isa::AVX512: return 1.0;  // the device peak is a 256-bit figure; wider FMAs make up the rest
    case Isa::AVX2: return 0.85;
    case Isa::PORTABLE: return 0.12;
  }
  return 0.1;
}

}  // namespace dnngraph::cpu::gemm
