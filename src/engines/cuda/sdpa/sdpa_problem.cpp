#include "engines/cuda/sdpa/sdpa_problem.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "engines/cuda/common/kernel_config.hpp"
#include "graph/sdpa_features.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda::sdpa {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

std::string type_name(DataType t) { return std::string(to_string(t)); }

Operand operand(const ir::Graph& g, const ir::Node& n, bool input, size_t slot) {
  Operand o;
  const auto& ids = input ? n.inputs : n.outputs;
  if (slot >= ids.size() || ids[slot] < 0) return o;
  const ir::Tensor& t = g.tensor(ids[slot]);
  o.id = ids[slot];
  o.dtype = t.dtype;
  for (size_t i = 0; i < 4 && i < t.dims.size(); ++i) o.dims[i] = t.dims[i], o.strides[i] = t.strides[i];
  return o;
}

// The head dim contiguous, every other stride (of a dim longer than 1) a positive multiple of 8
// elements: 16-byte row chunks for cp.async, 16-byte global strides for TMA.
bool check_strides(const std::string& node, const ir::Tensor& t, std::string& why) {
  if (t.dims[3] > 1 && t.strides[3] != 1) {
    why = "node '" + node + "', tensor '" + t.name + "': the head dim is not contiguous (its stride is " +
          std::to_string(t.strides[3]) + ", the kernels need 1)";
    return false;
  }
  for (size_t i = 0; i < 3; ++i)
    if (t.dims[i] > 1 && (t.strides[i] <= 0 || t.strides[i] % 8 != 0)) {
      why = "node '" + node + "', tensor '" + t.name + "': stride " + std::to_string(t.strides[i]) + " of dim " +
            std::to_string(i) + " is not a positive multiple of 8 elements (rows move in 16-byte chunks)";
      return false;
    }
  return true;
}

bool check_types(const Partition& p, const ir::Node& n, std::string& why) {
  const ir::Tensor& q = p.tensor(n.inputs[slot::SDPA_Q]);
  if (q.dtype != DataType::HALF && q.dtype != DataType::BFLOAT16) {
    why = "node '" + n.name + "', tensor '" + q.name + "': data type " + type_name(q.dtype) +
          " is not supported (HALF or BFLOAT16: the tensor cores take 16-bit operands)";
    return false;
  }
  const ir::Tensor& o = p.tensor(n.outputs[0]);
  if (o.dtype != DataType::HALF && o.dtype != DataType::BFLOAT16 && o.dtype != DataType::FLOAT) {
    why = "node '" + n.name + "', tensor '" + o.name + "': output data type " + type_name(o.dtype) +
          " is not supported (HALF, BFLOAT16 or FLOAT)";
    return false;
  }
  return true;
}

bool check_sizes(const Problem& pr, const ir::Tensor& v, std::string& why) {
  const std::string where = "node '" + pr.node + "', tensor '" + v.name + "': ";
  if (v.dims[3] != pr.d) {
    why = where + "head dim " + std::to_string(v.dims[3]) + " differs from Q's " + std::to_string(pr.d) +
          " (the kernels need equal head dims for Q, K and V)";
    return false;
  }
  if (pr.d > 256) {
    why = where + "head dim " + std::to_string(pr.d) + " exceeds 256 (a row of O is held in registers)";
    return false;
  }
  if (pr.d % 8 != 0) {
    why = where + "head dim " + std::to_string(pr.d) + " is not a multiple of 8 (rows move in 16-byte chunks)";
    return false;
  }
  if (pr.sq >= (int64_t{1} << 30) || pr.skv >= (int64_t{1} << 30)) {
    why = "node '" + pr.node + "': sequence lengths " + std::to_string(pr.sq) + " x " + std::to_string(pr.skv) +
          " reach 2^30 (the kernels index rows in 32 bits)";
    return false;
  }
  if (pr.b > 65535 || pr.h > 65535) {
    why = "node '" + pr.node + "': batch " + std::to_string(pr.b) + " or heads " + std::to_string(pr.h) +
          " exceed 65535 (grid dims)";
    return false;
  }
  // One block per 64 query rows at most (the smallest query block), all of them along grid x.
  if ((pr.sq + 63) / 64 * pr.h * pr.b >= (int64_t{1} << 31)) {
    why = "node '" + pr.node + "': " + std::to_string((pr.sq + 63) / 64) + " query blocks x " + std::to_string(pr.h) +
          " heads x " + std::to_string(pr.b) + " batches reach 2^31 (the grid's x dim)";
    return false;
  }
  return true;
}

// Largest dynamic shared memory a block may opt into, by architecture.
int max_smem_bytes(int sm) {
  if (sm == 80 || sm == 87) return 163 * 1024;
  if (sm == 90 || sm == 100 || sm == 103) return 227 * 1024;
  return 99 * 1024;
}


}  // namespace

bool describe(const Partition& p, Problem& out, std::string& why) {
  out = Problem{};
  if (p.nodes.size() != 1) {
    why = "takes a partition of one sdpa node, this one has " + std::to_string(p.nodes.size()) + " nodes";
    return false;
  }
  const ir::Node& n = p.node(0);
  if (!std::holds_alternative<SdpaAttr>(n.attr)) {
    why = "node '" + n.name + "' is " + std::string(op_name(n.attr)) + ", not sdpa";
    return false;
  }
  const ir::Graph& g = *p.graph;
  if (const std::string missing = sdpa_features_missing(sdpa_features(g, n), {}); !missing.empty()) {
    why = "node '" + n.name + "': " + missing + " (not implemented in this engine; the CPU engines and ref take "
          "them)";
    return false;
  }
  if (!check_types(p, n, why)) return false;
  const auto& attr = std::get<SdpaAttr>(n.attr);
  out.node = n.name;
  out.q = operand(g, n, true, slot::SDPA_Q);
  out.k = operand(g, n, true, slot::SDPA_K);
  out.v = operand(g, n, true, slot::SDPA_V);
  out.seq_q = operand(g, n, true, slot::SDPA_SEQ_Q);
  out.seq_kv = operand(g, n, true, slot::SDPA_SEQ_KV);
  out.o = operand(g, n, false, 0);
  out.stats = operand(g, n, false, 1);
  out.b = out.q.dims[0], out.h = out.q.dims[1], out.sq = out.q.dims[2], out.d = out.q.dims[3];
  out.hk = out.k.dims[1], out.skv = out.k.dims[2];
  if (!check_sizes(out, g.tensor(out.v.id), why)) return false;
  for (int id : {out.q.id, out.k.id, out.v.id, out.o.id})
    if (!check_strides(n.name, g.tensor(id), why)) return false;
  if (std::find(p.outputs.begin(), p.outputs.end(), out.o.id) == p.outputs.end()) {
    why = "node '" + n.name + "', tensor '" + g.tensor(out.o.id).name + "': O is not an output of the partition";
    return false;
  }
  if (std::find(p.outputs.begin(), p.outputs.end(), out.stats.id) == p.outputs.end()) out.stats.id = -1;
  out.scale = attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(out.d)));
  out.left = attr.get_diagonal_band_left_bound();
  out.right = attr.get_diagonal_band_right_bound();
  out.bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  return true;
}

bool check_device(const Target& t, std::string& why) {
  if (!t.device().is_cuda() || !t.handle->cuda) {
    why = "runs on CUDA handles; this one is " + t.device().to_string();
    return false;
  }
  if (t.info().sm_version < 80) {
    why = "needs tensor cores with bf16 mma.sync and cp.async (sm_80 or newer); the device is sm_" +
          std::to_string(t.info().sm_version);
    return false;
  }
  if (!nvrtc()) {
    why = nvrtc_error();
    return false;
  }
  return true;
}

Status encode_rows_map(const Operand& x, uint32_t rows, const void* base, TensorMap& out) {
  TensorMapSpec s;
  s.dtype = x.dtype;
  s.rank = 4;
  for (int i = 0; i < 4; ++i) s.dims[i] = static_cast<uint64_t>(x.dims[3 - i]);
  for (int i = 0; i < 3; ++i) {
    const int dim = 2 - i;  // sequence, head, batch
    s.strides_bytes[i] = x.dims[dim] > 1 ? static_cast<uint64_t>(x.strides[dim]) * 2 : 16;  // unused when the dim is 1
  }
  s.box[0] = 64;
  s.box[1] = rows;
  return encode_tensor_map(s, base, out);
}

double visible_pairs(const Problem& p) {
  const int64_t off = p.bottom_right ? p.skv - p.sq : 0;
  // Bounds past both sequences mask nothing; capped, no sum below overflows.
  const int64_t cap = p.sq + p.skv;
  double pairs = 0;
  for (int64_t i = 0; i < p.sq; ++i) {
    const int64_t lo = p.left ? std::clamp(i + off - std::min(*p.left, cap) + 1, int64_t{0}, p.skv) : 0;
    const int64_t hi = p.right ? std::clamp(i + off + std::min(*p.right, cap) + 1, int64_t{0}, p.skv) : p.skv;
    pairs += static_cast<double>(std::max<int64_t>(hi - lo, 0));
  }
  return pairs;
}

Config config_for(Core core, DataType in, DataType out, int d, bool overlap, bool negative_scale, int blocks_per_sm,
                  bool pingpong, bool persistent, int stages) {
  Config c;
  c.core = core;
  c.in = in;
  c.out = out;
  c.d_pad = static_cast<int>(round_up(std::max(d, 1), 64));
  c.negative_scale = negative_scale;
  if (core == Core::WGMMA) {
    c.bm = 128;
    c.blocks_per_sm = blocks_per_sm;
    c.bn = c.d_pad <= 128 && blocks_per_sm == 1 ? 128 : 64;
    c.stages = stages;
    c.overlap = overlap;
    c.pingpong = pingpong;
    c.persistent = persistent;
    c.threads = 384;
    c.smem_bytes = c.bm * c.d_pad * 2 + 2 * c.stages * c.bn * c.d_pad * 2 + 8 * (2 + 4 * c.stages) + 1024;
  } else {
    c.bm = 64;
    c.bn = c.d_pad <= 128 ? 64 : 32;
    c.stages = 2;
    c.overlap = false;
    c.threads = 128;
    c.smem_bytes = c.bm * c.d_pad * 2 + 4 * c.bn * c.d_pad * 2;
  }
  return c;
}

const KnobSchema<SdpaKnobs>& knob_schema() {
  static const KnobSchema<SdpaKnobs> kSchema{
      "cuda_sdpa_flash",
      {{"core", &SdpaKnobs::core, 0, 1},
       {"overlap", &SdpaKnobs::overlap, 0, 1, {}, false},
       {"blocks_per_sm", &SdpaKnobs::blocks_per_sm, 1, 2, {}, false},
       {"pingpong", &SdpaKnobs::pingpong, 0, 1, {}, false},
       {"persistent", &SdpaKnobs::persistent, 0, 1, {}, false},
       {"stages", &SdpaKnobs::stages, 2, 3, {}, false}}};
  return kSchema;
}

bool make_config(const Problem& p, const SdpaKnobs& k, int sm_version, Config& c, std::string& why) {
  const int64_t core = k.core >= 0 ? k.core : sm_version == 90 ? 1 : 0, overlap = k.overlap >= 0 ? k.overlap : 1;
  if (core == 1 && sm_version != 90) {
    why = "knob core=1 (wgmma + TMA) needs sm_90a; the device is sm_" + std::to_string(sm_version);
    return false;
  }
  const int blocks = k.blocks_per_sm > 0 ? static_cast<int>(k.blocks_per_sm) : 1;
  if (blocks == 2 && (core != 1 || round_up(std::max<int64_t>(p.d, 1), 64) != 64)) {
    why = "knob blocks_per_sm=2 goes with core=1 (wgmma) and head dims up to 64; here core=" + std::to_string(core) +
          ", head dim " + std::to_string(p.d);
    return false;
  }
  // Two S tiles (the overlap's) and O do not fit 104 registers: ptxas serialized every wgmma (C7512).
  if (blocks == 2 && overlap == 1) {
    why = "knob blocks_per_sm=2 goes with overlap=0: the overlap's second S tile does not fit the 104 registers a "
          "consumer has when two blocks share an SM (ptxas serializes the wgmma)";
    return false;
  }
  const bool pingpong = k.pingpong == 1;
  if (pingpong && (core != 1 || overlap != 1)) {
    why = "knob pingpong=1 goes with core=1 (wgmma) and overlap=1 (turns are taken in the overlapped loop); here core=" +
          std::to_string(core) + ", overlap=" + std::to_string(overlap);
    return false;
  }
  const bool persistent = k.persistent == 1;
  if (persistent && core != 1) {
    why = "knob persistent=1 goes with core=1 (wgmma); here core=" + std::to_string(core);
    return false;
  }
  const int stages = k.stages > 0 ? static_cast<int>(k.stages) : 2;
  if (stages != 2 && core != 1) {
    why = "knob stages=" + std::to_string(stages) + " goes with core=1 (wgmma; mma.sync double-buffers); here core=" +
          std::to_string(core);
    return false;
  }
  c = config_for(core == 1 ? Core::WGMMA : Core::MMA_SYNC, p.q.dtype, p.o.dtype, static_cast<int>(p.d), overlap == 1,
                 p.scale < 0, blocks, pingpong, persistent, stages);
  if (c.smem_bytes > max_smem_bytes(sm_version)) {
    why = "head dim " + std::to_string(p.d) + " needs " + std::to_string(c.smem_bytes) +
          " bytes of shared memory, more than sm_" + std::to_string(sm_version) + " gives a block";
    return false;
  }
  return true;
}

std::string Config::describe() const {
  std::ostringstream os;
  os << (core == Core::WGMMA ? "wgmma" : "mma.sync") << " " << bm << "x" << bn << " d" << d_pad << " "
     << to_string(in) << "->" << to_string(out);
  if (core == Core::WGMMA)
    os << " stages=" << stages << (overlap ? " overlap" : "") << (pingpong ? " pingpong" : "")
       << (persistent ? " persistent" : "");
  if (blocks_per_sm > 1) os << " " << blocks_per_sm << " blocks/SM";
  if (negative_scale) os << " negative-scale";
  return os.str();
}

std::string kernel_source(const Config& c) {
  std::ostringstream os;
  os << "// Generated by dnngraph's cuda_sdpa_flash engine: " << c.describe() << ".\n";
  KernelConfigSource cs;
  cs.dtype("kInput", c.in).dtype("kOutput", c.out).value("kHeadDim", c.d_pad).value("kKeysPerTile", c.bn);
  if (c.core == Core::WGMMA) {
    cs.value("kStages", c.stages).flag("kNegativeScale", c.negative_scale).flag("kOverlap", c.overlap);
    cs.flag("kPingpong", c.pingpong).flag("kPersistent", c.persistent);
    cs.value("kBlocksPerSm", c.blocks_per_sm);
    os << "#include \"sdpa_wgmma.cuh\"\n\n"
       << cs.str() << "extern \"C\" __global__ void __launch_bounds__(" << c.threads << ", " << c.blocks_per_sm << ") "
       << kKernelName
       << "(const dg::SdpaParams p, const __grid_constant__ dg::TmaDesc mq, const __grid_constant__ dg::TmaDesc mk, "
          "const __grid_constant__ dg::TmaDesc mv) {\n"
       << "  dg::sdpa_wgmma<" << kKernelConfig << ">(p, &mq, &mk, &mv);\n}\n";
  } else {
    cs.value("kWarps", c.threads / 32).flag("kNegativeScale", c.negative_scale);
    os << "#include \"sdpa_mma_sync.cuh\"\n\n"
       << cs.str() << "extern \"C\" __global__ void __launch_bounds__(" << c.threads << ") " << kKernelName
       << "(const dg::SdpaParams p) {\n"
       << "  dg::sdpa_mma_sync<" << kKernelConfig << ">(p);\n}\n";
  }
  return os.str();
}

}  // namespace dnngraph::cuda::sdpa
