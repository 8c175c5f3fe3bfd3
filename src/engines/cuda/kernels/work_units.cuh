// Which (tile, k range) units a persistent CTA of the wgmma cores runs, and how a tile's partial
// sums meet (splitk_fixup.cuh). Integer arithmetic only: the tests run it on the host too.
//
// Split-K (splits > 1): unit u is split u % splits of tile u / splits, every tile in `splits`
// equal k ranges. Stream-K tail (stream_k): the full waves but the last run whole tiles, one a
// unit; the k tiles of the rest (between one and two waves of tiles) go to the CTAs in equal
// shares of consecutive (tile, k) steps, so no CTA waits a whole tile while others idle (8192^3 in
// 128 x 256 tiles: 2048 tiles are 15.5 waves of 132 CTAs, and the last half wave cost a whole one).
// A share is at least one tile's k steps and less than two, so it touches at most three tiles and a
// tile takes parts of at most two shares.
#pragma once
#include "dg_types.cuh"

namespace dg {

// One unit: tile (-1: none, the CTA skips the slot), k tiles [kb, ke); part of the tile's `parts`
// units, whose partial sums go to slice (slot * slot_parts + part) when parts > 1.
struct WorkUnit {
  i64 tile, slot;
  int kb, ke, part, parts;
};

// The stream-K tail's slices per split tile (the most shares a tile takes parts of).
constexpr int kStreamKParts = 2;

struct UnitWalk {
  i64 tiles;
  int ktiles, splits, stream_k;

  // Tiles run whole before the stream-K tail, on `ctas` persistent CTAs.
  __device__ __forceinline__ i64 whole_tiles(i64 ctas) const {
    return tiles >= 2 * ctas ? (tiles / ctas - 1) * ctas : 0;
  }
  // Tiles split into parts (the slices' and counters' count) and the slices each one has.
  __device__ __forceinline__ i64 split_tiles(i64 ctas) const {
    return stream_k ? tiles - whole_tiles(ctas) : splits > 1 ? tiles : 0;
  }
  __device__ __forceinline__ int slot_parts() const { return stream_k ? kStreamKParts : splits; }

  // Units walked: u = cta, cta + ctas, ... below count(ctas) (a stream-K CTA's three segment
  // slots come after the whole tiles, slot j of CTA c at whole + j * ctas + c).
  __device__ __forceinline__ i64 count(i64 ctas) const {
    return stream_k ? whole_tiles(ctas) + 3 * ctas : tiles * splits;
  }

  __device__ __forceinline__ WorkUnit at(i64 u, i64 ctas) const {
    WorkUnit w;
    w.part = 0;
    w.parts = 1;
    if (!stream_k) {
      w.tile = u / splits;
      w.slot = w.tile;
      w.part = (int)(u - w.tile * splits);
      w.parts = splits;
      w.kb = (int)((i64)w.part * ktiles / splits);
      w.ke = (int)((i64)(w.part + 1) * ktiles / splits);
      return w;
    }
    const i64 whole = whole_tiles(ctas);
    if (u < whole) {
      w.tile = u;
      w.slot = -1;
      w.kb = 0;
      w.ke = ktiles;
      return w;
    }
    // CTA c's share of the tail's steps [c I / G, (c + 1) I / G), I = tail tiles x ktiles, over G
    // CTAs: all of them, or one per tile where the tiles are fewer (shares of whole tiles, so that
    // no tile takes parts of more than two shares).
    const i64 K = ktiles > 0 ? ktiles : 1, T = tiles - whole, G = ctas < T ? ctas : T;
    const i64 I = T * K, c = (u - whole) % ctas, j = (u - whole) / ctas;
    const i64 lo = c * I / G, hi = (c + 1) * I / G, t = lo / K + j;
    const i64 start = lo > t * K ? lo : t * K, end = hi < (t + 1) * K ? hi : (t + 1) * K;
    if (ktiles == 0 || c >= G || start >= end) {
      w.tile = -1;
      w.slot = -1;
      w.kb = w.ke = 0;
      return w;
    }
    // The shares that hold a step x: the largest c' with c' I / G <= x, i.e. ceil((x + 1) G / I) - 1.
    const i64 first = ((t * K + 1) * G + I - 1) / I - 1, last = (((t + 1) * K) * G + I - 1) / I - 1;
    w.tile = whole + t;
    w.slot = t;
    w.kb = (int)(start - t * K);
    w.ke = (int)(end - t * K);
    w.part = (int)(c - first);
    w.parts = (int)(last - first + 1);
    return w;
  }
};

}  // namespace dg
