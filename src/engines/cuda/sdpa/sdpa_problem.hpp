// cuda_sdpa_flash: what an sdpa partition asks for (shapes, strides, types, masks), whether the
// attention kernels can run it (and why not), the kernel configuration chosen by the knobs, and the
// CUDA source of that kernel.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "planning/engine.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::sdpa {

// A rank-4 tensor of the node ([b, h, s, d]); id -1 when absent.
struct Operand {
  int id = -1;
  DataType dtype = DataType::NOT_SET;
  std::array<int64_t, 4> dims{}, strides{};
};

struct Problem {
  std::string node;  // the sdpa node's name, for messages
  int64_t b = 0, h = 0, hk = 0, sq = 0, skv = 0, d = 0;
  Operand q, k, v, o, stats, seq_q, seq_kv;
  double scale = 1.0;
  std::optional<int64_t> left, right;
  bool bottom_right = false;
};

// Reads the partition; false with the reason (node, tensor, rule) when the kernels cannot run it.
// Needs no device: the device rules are in check_device.
bool describe(const Partition& p, Problem& out, std::string& why);
bool check_device(const Target& t, std::string& why);

// The TMA map of a rank-4 operand ([b, h, s, d], any batch/head/sequence strides) in boxes of 64
// head-dim columns (128 bytes, the 128-byte swizzle's span) x `rows` sequence rows.
Status encode_rows_map(const Operand& x, uint32_t rows, const void* base, TensorMap& out);

// Pairs (query, key) that some row sees, ignoring the padding mask (known only at execution).
double visible_pairs(const Problem& p);

enum class Core : int { MMA_SYNC = 0, WGMMA = 1 };

// One kernel: everything its source depends on (sizes are kernel arguments).
struct Config {
  Core core = Core::MMA_SYNC;
  DataType in = DataType::BFLOAT16, out = DataType::BFLOAT16;
  int d_pad = 64;        // the head dim rounded up to 64
  int bm = 64, bn = 64;  // query rows per block, keys per tile
  int stages = 2;        // wgmma: K/V ring depth (mma.sync: always double-buffered)
  bool overlap = true;   // wgmma: issue the next S before the current P V
  int blocks_per_sm = 1;  // wgmma, head dim 64: 2 = 64-key tiles in 104-register consumers, two blocks an SM
  bool pingpong = false;  // wgmma with overlap: the two consumer warpgroups take turns issuing their GEMMs
  bool persistent = false;  // wgmma: one block per SM slot runs query blocks in turn (next Q under this one's end)
  bool negative_scale = false;
  int threads = 128;
  int smem_bytes = 0;
  std::string describe() const;
};

// The engine's knobs: core 0 (mma.sync) or 1 (wgmma), overlap (wgmma: the next S issued before
// the current P V) 0 or 1, blocks_per_sm (wgmma, head dim 64) 1 or 2, pingpong (wgmma with
// overlap: the consumer warpgroups take turns on the tensor cores) 0 or 1, persistent (wgmma: a
// block per SM slot running query blocks in turn) 0 or 1, stages (wgmma: the K/V ring) 2 or 3.
// Absent (-1): wgmma on sm_90, mma.sync elsewhere; overlap on; one block an SM; no turns; a block
// per query block; two stages.
struct SdpaKnobs {
  int64_t core = -1;
  int64_t overlap = -1;
  int64_t blocks_per_sm = -1;
  int64_t pingpong = -1;
  int64_t persistent = -1;
  int64_t stages = -1;
};

const KnobSchema<SdpaKnobs>& knob_schema();

// The configuration for a problem and knobs on a device of `sm_version`; false with the reason
// when the knobs do not fit.
bool make_config(const Problem& p, const SdpaKnobs& k, int sm_version, Config& c, std::string& why);
// The same from the kernel's own parameters (tests and the kernel-cache prebuild use it).
Config config_for(Core core, DataType in, DataType out, int d, bool overlap, bool negative_scale,
                  int blocks_per_sm = 1, bool pingpong = false, bool persistent = false, int stages = 2);

inline constexpr const char* kKernelName = "dg_sdpa_flash";
std::string kernel_source(const Config& c);

}  // namespace dnngraph::cuda::sdpa
