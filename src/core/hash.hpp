// Hashing (xxHash3, 64-bit) for fingerprints, cache keys and checksums.
#pragma once
#include <cstdint>
#include <string_view>

#include <xxhash.h>

namespace dnngraph {

inline uint64_t hash64(const void* data, size_t size, uint64_t seed = 0) {
  return XXH3_64bits_withSeed(data, size, seed);
}
inline uint64_t hash64(std::string_view s, uint64_t seed = 0) { return hash64(s.data(), s.size(), seed); }

}  // namespace dnngraph
