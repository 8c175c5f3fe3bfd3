#include "engines/cuda/norm/norm_problem.hpp"

#include <algorithm>
#include <sstream>

#include "core/checked.hpp"
#include "engines/cuda/common/kernel_config.hpp"
#include "graph/op_attr.hpp"

namespace dnngraph::cuda::norm {
namespace {

constexpr int64_t kMaxCols = (int64_t{1} << 31) * kFinalizeColumns - 1;

bool io_type(DataType t) { return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16; }

std::string where(const ir::Node& n, const ir::Tensor& t) { return ir::describe(n) + ", tensor '" + t.name + "': "; }

bool produced(const Partition& p, int id) {
  return id >= 0 && std::find(p.outputs.begin(), p.outputs.end(), id) != p.outputs.end();
}

// The dims after the first must be packed row-major (size-1 dims may have any stride): the kernels
// index a row, and the per-column parameters, by the element's position in it.
bool packed_row(const ir::Node& n, const ir::Tensor& t, std::string& why) {
  int64_t want = 1;
  for (size_t d = t.dims.size(); d-- > 1;) {
    if (t.dims[d] == 1) continue;
    if (t.strides[d] != want) {
      std::ostringstream os;
      os << where(n, t) << "stride " << t.strides[d] << " of dim " << d << " breaks the packed-row rule (every dim "
         << "but the first packed row-major, innermost stride 1; this dim needs stride " << want << ")";
      why = os.str();
      return false;
    }
    want *= t.dims[d];
  }
  return true;
}

bool check_type(const ir::Node& n, const ir::Tensor& t, bool stat, std::string& why) {
  if (stat ? t.dtype == DataType::FLOAT : io_type(t.dtype)) return true;
  why = where(n, t) + "data type " + std::string(to_string(t.dtype)) + " is not supported (" +
        (stat ? "statistics are FLOAT" : "FLOAT, HALF and BFLOAT16 are") + ")";
  return false;
}

// A tensor with X's dims: packed rows, and an output's rows must not overlap.
bool check_rows(const ir::Node& n, const ir::Tensor& t, bool output, int64_t cols, int64_t& pitch, std::string& why) {
  if (!check_type(n, t, false, why) || !packed_row(n, t, why)) return false;
  pitch = t.dims[0] > 1 ? t.strides[0] : cols;
  if (output && t.dims[0] > 1 && pitch < cols) {
    why = where(n, t) + "rows overlap (dim 0 stride " + std::to_string(pitch) + " is below the row length " +
          std::to_string(cols) + ")";
    return false;
  }
  return true;
}

int at(const std::vector<int>& v, size_t k) { return k < v.size() ? v[k] : -1; }

// Reads the node's tensors by slot; outputs only where the partition produces them.
bool read_node(const Partition& p, const ir::Node& n, NormProblem& pr, std::string& why) {
  if (ir::is<LayernormAttr>(n) || ir::is<RmsnormAttr>(n)) {
    pr.layernorm = ir::is<LayernormAttr>(n);
    pr.x = at(n.inputs, slot::LN_X), pr.scale = at(n.inputs, slot::LN_SCALE), pr.bias = at(n.inputs, slot::LN_BIAS);
    pr.eps = at(n.inputs, slot::LN_EPS);
    pr.out = at(n.outputs, 0);
    const int mean = pr.layernorm ? at(n.outputs, 1) : -1, inv = at(n.outputs, pr.layernorm ? 2 : 1);
    pr.mean_out = produced(p, mean) ? mean : -1;
    pr.inv_out = produced(p, inv) ? inv : -1;
  } else if (ir::is<LayernormBackwardAttr>(n) || ir::is<RmsnormBackwardAttr>(n)) {
    pr.backward = true;
    pr.layernorm = ir::is<LayernormBackwardAttr>(n);
    pr.dy = at(n.inputs, slot::NB_DY), pr.x = at(n.inputs, slot::NB_X), pr.scale = at(n.inputs, slot::NB_SCALE);
    pr.mean_in = pr.layernorm ? at(n.inputs, slot::NB_MEAN) : -1;
    pr.inv_in = at(n.inputs, pr.layernorm ? size_t{slot::NB_INV_VAR} : size_t{slot::RB_INV_RMS});
    pr.out = produced(p, at(n.outputs, 0)) ? at(n.outputs, 0) : -1;
    pr.dscale = produced(p, at(n.outputs, 1)) ? at(n.outputs, 1) : -1;
    pr.dbias = produced(p, at(n.outputs, 2)) ? at(n.outputs, 2) : -1;
  } else {
    why = ir::describe(n) + " is not a layernorm, rmsnorm or their backward";
    return false;
  }
  if (!pr.backward && !produced(p, pr.out)) {
    why = ir::describe(n) + ": Y is not an output of the partition";
    return false;
  }
  return true;
}

bool check_tensors(const Partition& p, const ir::Node& n, NormProblem& pr, std::string& why) {
  const ir::Tensor& x = p.tensor(pr.x);
  if (!checked::volume({x.dims.begin() + 1, x.dims.end()}, pr.cols)) {
    why = where(n, x) + "the row length overflows";
    return false;
  }
  if (pr.cols > kMaxCols) {
    why = where(n, x) + "the row length " + std::to_string(pr.cols) + " is above " + std::to_string(kMaxCols) +
          " (the column sums' second pass takes a block per 32 columns, at most 2^31 blocks)";
    return false;
  }
  pr.rows = x.dims[0];
  if (!check_rows(n, x, false, pr.cols, pr.x_pitch, why)) return false;
  if (pr.dy >= 0 && !check_rows(n, p.tensor(pr.dy), false, pr.cols, pr.dy_pitch, why)) return false;
  if (pr.out >= 0 && !check_rows(n, p.tensor(pr.out), true, pr.cols, pr.out_pitch, why)) return false;
  for (int id : {pr.scale, pr.bias, pr.dscale, pr.dbias})
    if (id >= 0 && (!check_type(n, p.tensor(id), false, why) || !packed_row(n, p.tensor(id), why))) return false;
  for (int id : {pr.mean_in, pr.inv_in, pr.mean_out, pr.inv_out})
    if (id >= 0 && !check_type(n, p.tensor(id), true, why)) return false;
  auto stat_pitch = [&](int id) { return id < 0 ? 0 : pr.rows > 1 ? p.tensor(id).strides[0] : 1; };
  pr.mean_pitch = stat_pitch(pr.backward ? pr.mean_in : pr.mean_out);
  pr.inv_pitch = stat_pitch(pr.backward ? pr.inv_in : pr.inv_out);
  auto type_of = [&](int id) { return id >= 0 ? p.tensor(id).dtype : DataType::FLOAT; };
  pr.x_t = x.dtype, pr.dy_t = type_of(pr.dy), pr.out_t = type_of(pr.out), pr.scale_t = type_of(pr.scale);
  pr.bias_t = type_of(pr.bias), pr.dscale_t = type_of(pr.dscale), pr.dbias_t = type_of(pr.dbias);
  const int v = 16 / static_cast<int>(size_of(pr.x_t));
  const bool pitches = pr.rows == 1 || (pr.x_pitch % v == 0 && pr.dy_pitch % v == 0 && pr.out_pitch % v == 0);
  pr.vec_width = pr.cols % v == 0 && pitches ? v : 1;
  return true;
}

}  // namespace

bool describe(const Partition& p, NormProblem& out, std::string& why) {
  out = NormProblem{};
  if (p.nodes.size() != 1) {
    why = "the partition has " + std::to_string(p.nodes.size()) +
          " nodes; this engine runs a lone layernorm, rmsnorm or backward node (no fused epilogue)";
    return false;
  }
  const ir::Node& n = p.node(0);
  if (!read_node(p, n, out, why)) return false;
  const DataType ct = n.compute_type;
  if (ct != DataType::FLOAT && ct != DataType::NOT_SET && ct != DataType::HALF && ct != DataType::BFLOAT16) {
    why = ir::describe(n) + ": compute type " + std::string(to_string(ct)) + " is not supported (fp32 arithmetic)";
    return false;
  }
  return check_tensors(p, n, out, why);
}

bool sixteen_bit_rows(const NormProblem& pr) { return size_of(pr.x_t) == 2 && size_of(pr.dy_t) == 2; }

int max_resident_floats(bool backward, int block_threads, int vec) {
  if (backward) return block_threads >= 1024 ? 8 : 16;
  if (vec == 1) return 16;  // scalar items each keep an address and a bound: 32 of them spill
  return block_threads >= 1024 ? 24 : 32;
}

NormConfig choose_config(const NormProblem& pr, int64_t threads_per_row, int64_t rows_per_block, bool vec,
                         bool prefetch) {
  NormConfig c;
  c.vec = vec ? pr.vec_width : 1;
  const int64_t chunks = (pr.cols + c.vec - 1) / c.vec;
  auto fits = [&](int threads, int rows) {
    return (chunks + threads - 1) / threads * c.vec <= max_resident_floats(pr.backward, threads * rows, c.vec);
  };
  if (threads_per_row > 0) {
    c.threads = static_cast<int>(threads_per_row);
  } else {
    c.threads = 32;
    while (c.threads < 1024 && !fits(c.threads, 1)) c.threads *= 2;
  }
  c.rows = c.threads == 32 ? static_cast<int>(rows_per_block > 0 ? rows_per_block : 8) : 1;
  if (fits(c.threads, c.rows)) {
    c.items = static_cast<int>((chunks + c.threads - 1) / c.threads);
  } else {
    c.items = 0;
    c.rows = 1;  // streamed backward rows write their block's column sums in place: one group each
  }
  // A second row in registers fits beside vector items in blocks of up to 512 threads (128
  // registers a lane); scalar items take a register each. Blocks of 1024 get 64 registers a lane:
  // enough for 16-bit X and DY (raw, half the registers; ptxas: 64, no spills on sm_80 and sm_90a),
  // not for FLOAT rows (84 bytes of spills).
  c.prefetch = prefetch && pr.backward && c.resident() && c.vec > 1 && (c.block() < 1024 || sixteen_bit_rows(pr));
  return c;
}

NormConfig scalar_config(const NormProblem& pr, const NormConfig& c) {
  NormConfig s = c;
  s.items = c.items * c.vec;
  s.vec = 1;
  if (s.items > max_resident_floats(pr.backward, s.block(), 1)) s.items = 0, s.rows = 1;
  s.prefetch = false;
  return s;
}

int64_t grid_blocks(const NormProblem& pr, const NormConfig& c, int multiprocessors, int64_t blocks_per_sm) {
  const int64_t need = (pr.rows + c.rows - 1) / c.rows;
  const int64_t sms = std::max(1, multiprocessors);
  if (!pr.backward) return std::max<int64_t>(1, std::min(need, sms * 4 * std::max(1, 2048 / c.block())));
  // Backward: each block is a workspace slice of column sums (written, then read back), so as few
  // blocks as keep enough loads in flight: 32 KB of X and DY rows per SM (about what an H100/H200
  // SM needs to stream at its share of the bandwidth), at most 1024 threads per SM.
  const int64_t row_bytes = pr.cols * (size_of(pr.x_t) + size_of(pr.dy_t)) * c.rows;
  const int64_t want = blocks_per_sm > 0 ? blocks_per_sm : (32768 + row_bytes - 1) / row_bytes;
  const int64_t per_sm = std::clamp<int64_t>(want, 1, std::max(1, 1024 / c.block()));
  return std::max<int64_t>(1, std::min(need, sms * per_sm));
}

bool workspace_bytes(const NormProblem& pr, int64_t slices, int64_t& out) {
  out = 0;
  if (!pr.backward || !pr.column_sums()) return true;
  int64_t floats = 0;
  return checked::mul(slices, pr.cols, floats) && checked::mul(floats, 2 * 4, out);
}

std::string config_source(const NormProblem& pr, const NormConfig& c, const std::string& ns) {
  KernelConfigSource cs;
  cs.flag("kBackward", pr.backward).flag("kLayernorm", pr.layernorm);
  cs.dtype("kXType", pr.x_t).dtype("kDyType", pr.dy_t).dtype("kOutType", pr.out_t).dtype("kScaleType", pr.scale_t);
  cs.dtype("kBiasType", pr.bias_t).dtype("kDscaleType", pr.dscale_t).dtype("kDbiasType", pr.dbias_t);
  cs.flag("kHasBias", pr.bias >= 0).flag("kMeanOut", pr.mean_out >= 0).flag("kInvOut", pr.inv_out >= 0);
  cs.flag("kDx", pr.out >= 0).flag("kPartials", pr.column_sums());
  cs.flag("kDscale", pr.dscale >= 0).flag("kDbias", pr.dbias >= 0).flag("kPrefetch", c.prefetch);
  cs.value("kVec", c.vec).value("kThreads", c.threads).value("kRows", c.rows).value("kItems", c.items);
  return "namespace " + ns + " {\n" + cs.str() + "}  // namespace " + ns + "\n";
}

std::string entry_source(const std::string& kernel, const std::string& ns, int block) {
  return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + kernel +
         "(const dg::NormParams P) {\n  dg::norm_rowwise<" + ns + "::" + kKernelConfig + ">(P);\n}\n";
}

std::string kernel_source(const NormProblem& pr, const NormConfig& main) {
  std::string s = "// Generated by dnngraph's cuda_norm_rowwise engine.\n#include \"norm_rowwise.cuh\"\n\n";
  s += config_source(pr, main, "main_cfg") + entry_source(kMainKernel, "main_cfg", main.block());
  if (main.vec > 1) {
    const NormConfig sc = scalar_config(pr, main);
    s += config_source(pr, sc, "scalar_cfg") + entry_source(kScalarKernel, "scalar_cfg", sc.block());
  }
  if (pr.backward && pr.column_sums())
    s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kFinalizeThreads) + ") " +
         kFinalizeKernel + "(const dg::NormFinalizeParams F) {\n  dg::norm_partials<main_cfg::" + kKernelConfig +
         ", " + std::to_string(kFinalizeLanes) + ">(F);\n}\n";
  return s;
}

}  // namespace dnngraph::cuda::norm
