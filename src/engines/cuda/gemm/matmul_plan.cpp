#include "engines/cuda/gemm/matmul_plan.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "engines/cuda/common/kernel_config.hpp"
#include "engines/cuda/common/launch_order.hpp"
#include "engines/cuda/common/register_epilogue.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::gemm {
namespace {

// A matmul core's configuration: its tile, each operand's major, the core's own members (added
// by `core_members`), and the Epilogue.
template <class Tile, class CoreMembers>
std::string matmul_config_source(const Tile& tile, bool a_k_major, bool b_k_major, CoreMembers core_members) {
  KernelConfigSource s;
  s.tile(tile).flag("kAKMajor", a_k_major).flag("kBKMajor", b_k_major);
  core_members(s);
  return s.type("Epilogue", "dg_gen::Epilogue").str();
}

// kernels/gemm_mma_sync.cuh's configuration: the core's tile, each operand's major and whether
// it loads 16-byte chunks.
struct MmaSyncKernel {
  MmaSyncTile tile;
  bool a_k_major, b_k_major, a_vec, b_vec;
};

std::string config_source(const MmaSyncKernel& k) {
  return matmul_config_source(k.tile, k.a_k_major, k.b_k_major,
                              [&](KernelConfigSource& s) { s.flag("kAVec", k.a_vec).flag("kBVec", k.b_vec); });
}

// kernels/gemm_wgmma.cuh's configuration: the core's tile, the operands' majors, ping-pong
// consumers, clusters of kCluster CTAs, and the epilogue's mode (epilogue_tma_store.cuh's).
struct WgmmaKernel {
  WgmmaTile tile;
  bool a_k_major, b_k_major, pingpong;
  int cluster;
  int epilogue_mode;  // 0: staged; else register_epilogue_mode's
  bool tf32x3;
};

std::string config_source(const WgmmaKernel& k) {
  return matmul_config_source(k.tile, k.a_k_major, k.b_k_major, [&](KernelConfigSource& s) {
    s.flag("kPingpong", k.pingpong).value("kCluster", k.cluster);
    if (k.epilogue_mode) s.value("kEpilogue", k.epilogue_mode);
    if (k.tf32x3) s.flag("kTf32x3", true);
  });
}

bool misaligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes != 0; }

// TMA maps for the wgmma core: A as (K, M, batch) or (M, K, batch) innermost first, B as (K, N,
// batch) or (N, K, batch); the batch coordinate counts the operand's batch offset in units. Boxes
// are 128 bytes wide (64 16-bit or 32 fp32 elements).
TensorMapSpec operand_map(const MatmulProblem& mp, bool is_a, const MatmulConfig& c, int64_t unit, int64_t batch_extent) {
  TensorMapSpec s;
  s.dtype = is_a ? mp.dtype : mp.b_dtype;
  const int64_t es = size_of(s.dtype);
  const bool k_major = is_a ? mp.a_k_major : mp.b_k_major;
  const int64_t mn = is_a ? mp.M : mp.N;
  const int64_t s_mn = is_a ? mp.a_sm : mp.b_sn;
  const int64_t s_k = is_a ? mp.a_sk : mp.b_sk;
  // Clusters: each CTA of a pair loads half of the shared B tile (K-major: BN / 2 rows per box).
  const int tile_mn = is_a ? c.bm : c.bn / c.cluster;
  s.rank = 3;
  s.dims[0] = static_cast<uint64_t>(k_major ? mp.K : mn);
  s.dims[1] = static_cast<uint64_t>(k_major ? mn : mp.K);
  s.dims[2] = static_cast<uint64_t>(batch_extent);
  const int64_t outer = k_major ? s_mn : s_k;
  s.strides_bytes[0] = static_cast<uint64_t>(std::max<int64_t>(outer, 16 / es) * es);
  // One batch (or a broadcast operand): a stride past the whole matrix, as a packed 3D tensor has.
  s.strides_bytes[1] = batch_extent > 1 ? static_cast<uint64_t>(unit * es)
                                        : (s.strides_bytes[0] * s.dims[1] + 15) / 16 * 16;
  // K-major: one box of BK k x tile rows; MN-major (16-bit only): boxes of 64 (m or n) x 64 k,
  // several per tile.
  s.box[0] = static_cast<uint32_t>(128 / es);
  s.box[1] = k_major ? static_cast<uint32_t>(tile_mn) : 64;
  s.box[2] = 1;
  return s;
}

int64_t round256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// A K-major fp32 copy of an MN-major operand (MatmulConfig::transpose): [batch slot][mn][ldk],
// batch slots as the operand's TMA map counts them (offset / unit), k rows padded to 16 bytes.
struct OperandCopy {
  bool on = false;
  int64_t unit = 1, extent = 1, mn = 0, ldk = 0, bytes = 0;
};

// The smallest batch stride (in elements) every batch offset is a multiple of, and how many
// such units the offsets span (the TMA map's batch extent).
int64_t batch_unit(const std::vector<int64_t>& strides, const std::vector<int64_t>& dims, int64_t& extent) {
  int64_t unit = 0, span = 0;
  for (size_t i = 0; i < strides.size(); ++i) {
    if (strides[i] == 0 || dims[i] == 1) continue;
    unit = unit == 0 ? strides[i] : std::gcd(unit, strides[i]);
    span += (dims[i] - 1) * strides[i];
  }
  if (unit == 0) {
    extent = 1;
    return 8;
  }
  extent = span / unit + 1;
  return unit;
}

OperandCopy operand_copy(const MatmulProblem& mp, const MatmulConfig& c, bool is_a) {
  OperandCopy o;
  o.on = c.transpose && !(is_a ? mp.a_k_major : mp.b_k_major);
  if (!o.on) return o;
  o.unit = batch_unit(is_a ? mp.a_bs : mp.b_bs, mp.batch, o.extent);
  o.mn = is_a ? mp.M : mp.N;
  o.ldk = (mp.K + 3) / 4 * 4;
  o.bytes = round256(o.extent * o.mn * o.ldk * 4);
  return o;
}

// The problem as the wgmma kernel sees it once the copies are made: copied operands K-major.
MatmulProblem kernel_view(const MatmulProblem& mp, const OperandCopy& ca, const OperandCopy& cb) {
  MatmulProblem v = mp;
  if (ca.on) v.a_k_major = true, v.a_sm = ca.ldk, v.a_sk = 1;
  if (cb.on) v.b_k_major = true, v.b_sn = cb.ldk, v.b_sk = 1;
  return v;
}

class MatmulPlan final : public KernelPlan {
 public:
  MatmulPlan(const Partition& p, MatmulPieces pieces, MatmulConfig c, KernelBuild k, int sms, CUfunction transpose)
      : KernelPlan(p, std::move(k)), mp_(std::move(pieces.mp)), epi_(std::move(pieces.epi)), c_(c), sms_(sms),
        transpose_(transpose), copy_a_(operand_copy(mp_, c_, true)), copy_b_(operand_copy(mp_, c_, false)) {}

  // The epilogue's workspace, then the operand copies (transpose), then (split-K) the partial
  // sums and one counter per tile.
  int64_t epilogue_bytes() const { return round256(epi_.L.workspace_bytes); }
  int64_t tiles() const { return mp_.batch_count() * ceil_div(mp_.M, c_.bm) * ceil_div(mp_.N, c_.bn); }
  // Persistent CTAs: one per multiprocessor (clusters: pairs), at most one per unit.
  int64_t ctas() const {
    const int64_t units = c_.cluster > 1 ? mp_.batch_count() * ceil_div(ceil_div(mp_.M, c_.bm), 2) * ceil_div(mp_.N, c_.bn)
                                         : tiles() * c_.splits;
    return std::min<int64_t>(units, sms_ / c_.cluster);
  }
  // Split-K's or the stream-K tail's partial sums: slots x parts slices of a tile, a counter per slot.
  int64_t split_slots() const {
    return c_.stream_k ? stream_k_split_tiles(tiles(), ctas()) : c_.splits > 1 ? tiles() : 0;
  }
  int split_parts() const { return c_.stream_k ? kStreamKParts : c_.splits; }
  int64_t workspace_size() const override {
    if (split_slots() == 0 && !c_.transpose) return epi_.L.workspace_bytes;
    const int64_t split = split_slots() * (split_parts() * c_.bm * c_.bn * 4 + 4);
    return epilogue_bytes() + copy_a_.bytes + copy_b_.bytes + split;
  }

  Status execute(const ExecArgs& args) const override {
    HandleImpl& h = args.handle;
    if (!h.device.is_cuda() || !h.cuda) return {ErrorCode::GRAPH_EXECUTION_FAILED, "matmul plan: not a CUDA handle"};
    if ((split_slots() > 0 || c_.transpose) && !args.workspace)
      return {ErrorCode::WORKSPACE_TOO_SMALL, "matmul plan, node '" +
                                                  part_.graph->nodes[static_cast<size_t>(anchor_node(part_))].name +
                                                  "': split_k=" + std::to_string(c_.splits) + " transpose=" +
                                                  std::to_string(c_.transpose ? 1 : 0) + " needs " +
                                                  std::to_string(workspace_size()) + " bytes of workspace but it is null"};
    const void* a = args.ptrs[static_cast<size_t>(mp_.a)];
    const void* bp = args.ptrs[static_cast<size_t>(mp_.b)];
    for (int id : {mp_.a, mp_.b}) {
      const void* ptr = args.ptrs[static_cast<size_t>(id)];
      if (!ptr) return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name + "': the pointer is null"};
      const bool vec = id == mp_.a ? mp_.a_vec : mp_.b_vec;
      if ((vec || c_.core == Core::WGMMA) && misaligned(ptr, 16))
        return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + part_.tensor(id).name +
                                                     "': the pointer is not 16-byte aligned, which this plan's "
                                                     "16-byte loads need (build the plan for such pointers elsewhere)"};
    }
    codegen::PointwiseParams pp;
    int vec = 1;
    if (auto s = epilogue_params(part_, epi_.L, args, pp, vec); !s.ok()) return s;
    GemmParams g = gemm_params(mp_, a, bp);
    g.epi_vec = vec;
    g.tiles_m = static_cast<int32_t>(ceil_div(mp_.M, c_.bm));
    g.tiles_n = static_cast<int32_t>(ceil_div(mp_.N, c_.bn));
    const int64_t tiles = g.batch_count * g.tiles_m * g.tiles_n;
    if (auto s = reset_reductions(h, epi_.L, pp); !s.ok()) return s;
    if (c_.core == Core::MMA_SYNC) {
      void* kargs[] = {&g, &pp};
      if (auto s = launch_3d(h, k_.main, {static_cast<unsigned>(tiles), 1, 1}, static_cast<unsigned>(c_.threads),
                             static_cast<unsigned>(c_.smem_bytes), kargs, kMmaSyncKernel);
          !s.ok())
        return s;
    } else {
      TensorMap ma, mb;
      int64_t a_extent = 1, b_extent = 1;
      g.a_batch_unit = batch_unit(mp_.a_bs, mp_.batch, a_extent);
      g.b_batch_unit = batch_unit(mp_.b_bs, mp_.batch, b_extent);
      char* copies = static_cast<char*>(args.workspace) + epilogue_bytes();
      const void* a_tma = a;
      const void* b_tma = bp;
      if (auto s = copy_operand(h, copy_a_, a, true, copies, a_tma); !s.ok()) return s;
      if (auto s = copy_operand(h, copy_b_, bp, false, copies + copy_a_.bytes, b_tma); !s.ok()) return s;
      const MatmulProblem v = kernel_view(mp_, copy_a_, copy_b_);
      const int64_t a_unit = copy_a_.on ? copy_a_.mn * copy_a_.ldk : g.a_batch_unit;
      const int64_t b_unit = copy_b_.on ? copy_b_.mn * copy_b_.ldk : g.b_batch_unit;
      if (auto s = encode_tensor_map(operand_map(v, true, c_, a_unit, a_extent), a_tma, ma); !s.ok()) return s;
      if (auto s = encode_tensor_map(operand_map(v, false, c_, b_unit, b_extent), b_tma, mb); !s.ok()) return s;
      g.splits = c_.splits;
      g.stream_k = c_.stream_k ? 1 : 0;
      if (const int64_t slots = split_slots(); slots > 0) {
        g.ws = copies + copy_a_.bytes + copy_b_.bytes;
        char* counters = static_cast<char*>(g.ws) + slots * split_parts() * c_.bm * c_.bn * 4;
        if (auto s = fill32(h, counters, 0, static_cast<size_t>(slots)); !s.ok()) return s;
      }
      TensorMap my;  // the register epilogue's output map
      if (c_.register_epilogue)
        if (auto s = encode_register_epilogue_map(part_, epi_, args, my); !s.ok()) return s;
      void* kargs[] = {&g, &pp, &ma, &mb, &my};  // (my: read only by the register epilogue's kernel)
      // Clusters of 2: one pair of CTAs per pair of m tiles, at most one CTA per multiprocessor.
      const int64_t units = c_.cluster > 1 ? g.batch_count * ceil_div(g.tiles_m, 2) * g.tiles_n : tiles * c_.splits;
      const int64_t grid = ctas() * c_.cluster;
      // The wgmma kernel starts with pdl_start: short shares launch programmatically (launch_order.hpp).
      const int64_t ksteps = ceil_div(ceil_div(mp_.K, c_.bk), c_.splits);
      if (auto s = launch_3d(h, k_.main, {static_cast<unsigned>(grid), 1, 1}, static_cast<unsigned>(c_.threads),
                             static_cast<unsigned>(c_.smem_bytes), kargs, kWgmmaKernel, launch_order_for(units, grid, ksteps));
          !s.ok())
        return s;
    }
    return run_finalize(h, epi_.L, k_.finalize, pp);
  }

  // The transpose pass of one operand into `dst` (where o.on), which the TMA map then reads.
  Status copy_operand(HandleImpl& h, const OperandCopy& o, const void* src, bool is_a, char* dst,
                      const void*& tma_base) const {
    if (!o.on) return {};
    const void* s = src;
    void* d = dst;
    int64_t k = mp_.K, mn = o.mn, s_k = is_a ? mp_.a_sk : mp_.b_sk, s_mn = is_a ? mp_.a_sm : mp_.b_sn, unit = o.unit,
            ldk = o.ldk;
    void* kargs[] = {&s, &d, &k, &mn, &s_k, &s_mn, &unit, &ldk};
    const Grid3 grid{static_cast<unsigned>(ceil_div(mn, 32)), static_cast<unsigned>(ceil_div(k, 32)),
                     static_cast<unsigned>(o.extent)};
    if (auto st = launch_3d(h, transpose_, grid, 256, 0, kargs, kTransposeKernel); !st.ok()) return st;
    tma_base = dst;
    return {};
  }

 private:
  MatmulProblem mp_;
  EpiloguePlan epi_;
  MatmulConfig c_;
  int sms_;
  CUfunction transpose_;
  OperandCopy copy_a_, copy_b_;
};

}  // namespace

std::string MatmulConfig::describe() const {
  std::ostringstream os;
  os << (core == Core::WGMMA ? "wgmma" : "mma.sync") << (tf32 ? " tf32" : tf32x3 ? " 3xtf32" : "") << " " << bm << "x" << bn << "x" << bk << " stages=" << stages
     << (pingpong ? " ping-pong" : "") << (splits > 1 ? " split_k=" + std::to_string(splits) : "")
     << (stream_k ? " stream_k" : "")
     << (transpose ? " transpose" : "") << (cluster > 1 ? " cluster=" + std::to_string(cluster) : "")
     << (register_epilogue ? " epilogue=1" : "");
  return os.str();
}

std::string matmul_source(const MatmulProblem& mp, const MatmulConfig& c, const EpiloguePlan& e, const ir::Graph& g) {
  std::ostringstream os;
  os << "// Generated by dnngraph's CUDA matmul engines.\n#include \"dg_math.cuh\"\n";
  if (c.core == Core::MMA_SYNC) {
    os << "#include \"gemm_mma_sync.cuh\"\n\n" << epilogue_source(e, g) << "\n"
       << config_source(MmaSyncKernel{{mp.dtype, c.bm, c.bn, c.bk, 2, 2, c.stages}, mp.a_k_major, mp.b_k_major, mp.a_vec,
                                      mp.b_vec});
    os << "extern \"C\" __global__ void __launch_bounds__(" << c.threads << ") " << kMmaSyncKernel
       << "(const dg::GemmParams g, const dg::PointwiseParams p) {\n  dg::gemm_mma_sync<" << kKernelConfig
       << ">(g, p);\n}\n";
  } else {
    os << "#include \"gemm_wgmma.cuh\"\n\n" << epilogue_source(e, g, c.register_epilogue) << "\n"
       << config_source(WgmmaKernel{{mp.dtype, c.bn, c.stages, c.splits > 1 || c.stream_k, mp.b_dtype},
                                    mp.a_k_major || c.transpose,
                                    mp.b_k_major || c.transpose, c.pingpong, c.cluster,
                                    c.register_epilogue ? register_epilogue_mode(e) : 0, c.tf32x3});
    // Clusters as a compile-time attribute: cuLaunchKernel then launches the grid in clusters.
    os << "extern \"C\" __global__ void "
       << (c.cluster > 1 ? "__cluster_dims__(" + std::to_string(c.cluster) + ", 1, 1) " : "") << "__launch_bounds__("
       << c.threads << ", 1) " << kWgmmaKernel
       << "(const dg::GemmParams g, const dg::PointwiseParams p, const __grid_constant__ dg::TmaDesc ma, "
          "const __grid_constant__ dg::TmaDesc mb"
       << (c.register_epilogue ? ", const __grid_constant__ dg::TmaDesc my" : "") << ") {\n  dg::gemm_wgmma<"
       << kKernelConfig << ">(g, p, &ma, &mb" << (c.register_epilogue ? ", &my" : "") << ");\n}\n";
  }
  if (c.core == Core::WGMMA && c.transpose)
    os << "#include \"gemm_transpose.cuh\"\n\nextern \"C\" __global__ void __launch_bounds__(256) " << kTransposeKernel
       << "(const float* src, float* dst, long long K, long long MN, long long s_k, long long s_mn, long long unit, "
          "long long ldk) {\n  dg::transpose_to_k_major(src, dst, K, MN, s_k, s_mn, unit, ldk);\n}\n";
  os << finalize_source(e.L);
  return os.str();
}

Status prepare_matmul(const Partition& p, const Target& t, MatmulPieces& out, TensorCoreInputs inputs) {
  std::string why;
  if (!describe_matmul(p, t, out.mp, why, inputs)) return {ErrorCode::GRAPH_NOT_SUPPORTED, why};
  if (!plan_epilogue(p, out.mp.axes, t.dynamic_shapes, out.epi, why))
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "the epilogue does not fit: " + why};
  return {};
}

std::unique_ptr<Plan> make_matmul_plan(const Partition& p, MatmulPieces pieces, MatmulConfig c, KernelBuild k,
                                       int multiprocessors, CUfunction transpose) {
  return std::make_unique<MatmulPlan>(p, std::move(pieces), c, std::move(k), multiprocessors, transpose);
}

}  // namespace dnngraph::cuda::gemm
