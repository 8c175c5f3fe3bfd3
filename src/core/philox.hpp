// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, so any element's random number is computed from its position alone.
// sdpa's dropout uses it so that the backward (and every engine) regenerates the forward's mask.
// The bit stream is dnngraph's own, not cuDNN's: the same seed gives a different mask there.
#pragma once
#include <array>
#include <cstdint>

namespace dnngraph::philox {

using Block = std::array<uint32_t, 4>;

inline Block philox4x32_10(Block ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kMul0} * ctr[0], p1 = uint64_t{kMul1} * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key0, static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key1, static_cast<uint32_t>(p0)};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return ctr;
}

// sdpa's dropout mask. Element `index` (the row-major position of (b, h, i, j) in [b, h, sq, skv])
// takes word index % 4 of the block whose counter is (index / 4, offset) under key `seed`; it is
// kept when its top 24 bits, as a fraction of 2^24, are at least the drop probability.
struct DropoutMask {
  uint64_t seed = 0, offset = 0;
  uint32_t threshold = 0;  // ceil(probability * 2^24): words below it are dropped

  DropoutMask(uint64_t seed_, uint64_t offset_, double probability) : seed(seed_), offset(offset_) {
    const double t = probability * 16777216.0;
    threshold = static_cast<uint32_t>(t);
    if (static_cast<double>(threshold) < t) ++threshold;
  }

  Block block(uint64_t group) const {
    return philox4x32_10({static_cast<uint32_t>(group), static_cast<uint32_t>(group >> 32),
                          static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                         static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  }
  bool keep(uint64_t index) const { return (block(index / 4)[index % 4] >> 8) >= threshold; }
  // keep(first + n) for n < count into dst (1 kept, 0 dropped), one block per four elements.
  template <class T>
  void row(uint64_t first, int64_t count, T* dst, T kept_value) const {
    uint64_t index = first;
    const uint64_t end = first + static_cast<uint64_t>(count);
    while (index < end) {
      const Block b = block(index / 4);
      for (uint64_t w = index % 4; w < 4 && index < end; ++w, ++index)
        dst[index - first] = (b[w] >> 8) >= threshold ? kept_value : T(0);
    }
  }
};

}  // namespace dnngraph::philox
