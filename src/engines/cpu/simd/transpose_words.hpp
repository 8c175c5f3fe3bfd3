// An 8 x 8 block of 4-byte words transposed in AVX2 registers (unpack, shuffle, lane swap; the
// words' bits move unchanged): cpu_layout_copy's plane transposes and cpu_sdpa_flash's K^T tiles.
#pragma once
#include <cstdint>

namespace dnngraph::cpu::simd {

// Whether transpose_8x8_words runs on this CPU (AVX2).
bool words_transpose_available();

// Word i of source row j (s + j * sld) to word j of destination row i (d + i * dld), i, j < 8.
void transpose_8x8_words(const uint32_t* s, int64_t sld, uint32_t* d, int64_t dld);

}  // namespace dnngraph::cpu::simd
