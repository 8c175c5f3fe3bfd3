#include "engines/cuda/codegen/emitter.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "engines/cuda/codegen/pointwise_ops.hpp"

namespace dnngraph::cuda::codegen {
namespace {

std::string dt(DataType t) { return "dg::DT_" + std::string(to_string(t)); }
std::string rm(ReductionMode m) { return "dg::RM_" + std::string(to_string(m)); }

// What a register holds and how it is read at lane j.
struct Reg {
  enum Kind { LOADED, SCALAR, INDEX, COMPUTED, ANCHOR } kind = COMPUTED;
  bool wide = true;  // one value per lane (V); false: one value for the whole vector
  int scalar = -1;   // SCALAR: index into p.scalar
  int dim = -1;      // INDEX: collapsed dim, -1 for a size-1 axis
};

class Emitter {
 public:
  Emitter(const expr::Program& prog, const ir::Graph& g, const Layout& L, bool register_store)
      : prog_(prog), g_(g), L_(L), register_store_(register_store) {}

  bool run(std::string& out, std::string& why) {
    classify();
    os_ << "struct Epilogue {\n"
        << "  typedef " << (L_.wide_index ? "long long" : "int") << " Index;\n"
        << "  static constexpr int kRank = " << L_.rank() << ";\n"
        << "  static constexpr int kFull = " << L_.full_count() << ";\n"
        << "  static constexpr bool kDeterministic = " << (L_.deterministic ? "true" : "false") << ";\n";
    emit_loaded();
    emit_coords();
    emit_load();
    if (!emit_apply(false, why)) return false;
    if (register_store_) {
      const bool partial = std::any_of(L_.reductions.begin(), L_.reductions.end(), [](const Reduction& r) { return !r.full; });
      if (prog_.stores.size() != 1 || partial) {
        why = "the register epilogue takes one stored tensor and full reductions only";
        return false;
      }
      os_ << "  enum : int { kStoreType = " << dt(g_.tensor(prog_.stores[0]).dtype) << " };\n";
      if (!emit_apply(true, why)) return false;
    }
    emit_full();
    os_ << "};\n";
    out = os_.str();
    return true;
  }

 private:
  const expr::Program& prog_;
  const ir::Graph& g_;
  const Layout& L_;
  const bool register_store_;
  std::map<int, Reg> regs_;
  std::ostringstream os_;
  std::ostringstream decls_, lanes_;  // the pending run of wide APPLYs (flush_lanes)

  int inner() const { return L_.rank() - 1; }

  // The type an APPLY's value is rounded to before use: its virtual tensor's (from the lowering), or
  // the type of the output it is stored to when the partition also uses it (they read what is
  // stored, as when the partitions run apart). NOT_SET: keep fp32.
  DataType rounding_of(const expr::Instr& in) const {
    if (in.round_to != DataType::NOT_SET && in.round_to != DataType::FLOAT) return in.round_to;
    const DataType t = g_.tensor(in.tensor).dtype;
    if (t == DataType::FLOAT || std::find(prog_.stores.begin(), prog_.stores.end(), in.tensor) == prog_.stores.end())
      return DataType::NOT_SET;
    for (const auto& other : prog_.code)
      if ((other.kind == expr::InstrKind::APPLY || other.kind == expr::InstrKind::REDUCE) &&
          std::find(std::begin(other.src), std::end(other.src), in.dst) != std::end(other.src))
        return t;
    return DataType::NOT_SET;
  }

  void classify() {
    for (const auto& in : prog_.code) {
      Reg r;
      switch (in.kind) {
        case expr::InstrKind::LOAD_ANCHOR: r.kind = Reg::ANCHOR; break;
        case expr::InstrKind::LOAD: {
          r.kind = Reg::LOADED;
          r.wide = L_.operands[static_cast<size_t>(L_.operand_of(in.tensor))].inner != Access::BCAST;
          break;
        }
        case expr::InstrKind::LOAD_SCALAR:
          r.kind = Reg::SCALAR;
          r.wide = false;
          r.scalar = L_.scalar_of(in.tensor);
          break;
        case expr::InstrKind::INDEX:
          r.kind = Reg::INDEX;
          r.dim = (in.axis >= 0 && static_cast<size_t>(in.axis) < L_.dim_of_axis.size()) ? L_.dim_of_axis[in.axis] : -1;
          r.wide = r.dim == inner();
          break;
        case expr::InstrKind::APPLY: {
          r.wide = false;
          for (int s : in.src)
            if (s >= 0) r.wide = r.wide || regs_[s].wide;
          break;
        }
        default: continue;
      }
      regs_[in.dst] = r;
    }
  }

  // Register `reg` at lane `j` (an expression; j is the loop variable name or a constant).
  std::string ref(int reg, const std::string& j) {
    const Reg& r = regs_[reg];
    const std::string lane = r.wide ? j : "0";
    switch (r.kind) {
      case Reg::LOADED: return "l.r" + std::to_string(reg) + "[" + lane + "]";
      case Reg::SCALAR: return "p.scalar[" + std::to_string(r.scalar) + "]";
      case Reg::INDEX:
        if (r.dim < 0) return "0.0f";
        return r.wide ? "(float)(c[" + std::to_string(r.dim) + "] + " + j + ")" : "(float)c[" + std::to_string(r.dim) + "]";
      case Reg::ANCHOR: return "anchor[" + j + "]";
      case Reg::COMPUTED: break;
    }
    return "r" + std::to_string(reg) + "[" + lane + "]";
  }

  std::string width(bool wide) const { return wide ? "V" : "1"; }

  // Consecutive wide APPLYs go into one loop over the V lanes (each reads only lane j of wide
  // registers, or lane 0 of narrow ones, so the order across lanes is free): NVRTC compiled a
  // 400-op chain written as 400 loops in 4.3 s and as one loop in 1.3 s, the same cubin size.
  void flush_lanes() {
    if (lanes_.tellp() == 0) return;
    os_ << decls_.str() << "#pragma unroll\n    for (int j = 0; j < V; ++j) {\n" << lanes_.str() << "    }\n";
    decls_.str("");
    lanes_.str("");
  }

  std::string stride(int k, int d) const {
    if (L_.dynamic) return "(Index)p.stride[" + std::to_string(k) + "][" + std::to_string(d) + "]";
    return "(Index)" + std::to_string(L_.operands[static_cast<size_t>(k)].strides[static_cast<size_t>(d)]);
  }

  // The element offset of operand k at coordinates c.
  std::string offset(int k) const {
    std::string s;
    const auto& st = L_.operands[static_cast<size_t>(k)].strides;
    for (int d = 0; d < L_.rank(); ++d) {
      if (st[static_cast<size_t>(d)] == 0) continue;
      s += (s.empty() ? "" : " + ") + std::string("c[") + std::to_string(d) + "] * " + stride(k, d);
    }
    return s.empty() ? "(Index)0" : s;
  }

  void emit_loaded() {
    os_ << "  template <int V> struct Loaded {\n";
    bool any = false;
    for (const auto& in : prog_.code)
      if (in.kind == expr::InstrKind::LOAD) {
        os_ << "    float r" << in.dst << "[" << width(regs_[in.dst].wide) << "];\n";
        any = true;
      }
    if (!any) os_ << "    float unused;\n";
    os_ << "  };\n";
  }

  std::string divisor(int d) const {
    if (!L_.dynamic) {
      const std::string n = std::to_string(L_.dims[static_cast<size_t>(d)]);
      return d == inner() ? "((Index)" + n + " / V)" : "(Index)" + n;
    }
    return "(Index)p.div_by[" + std::to_string(d) + "]";
  }

  void emit_coords() {
    os_ << "  template <int V>\n  __device__ __forceinline__ static void coords(const dg::PointwiseParams& p, "
           "dg::i64 v, Index (&c)[kRank]) {\n    Index t = (Index)v;\n";
    for (int d = inner(); d >= 1; --d) {
      const std::string ds = std::to_string(d);
      const std::string q = (L_.dynamic && !L_.wide_index)
                                ? "(Index)dg::fast_div((dg::u32)t, p.div_magic[" + ds + "])"
                                : "t / " + divisor(d);
      os_ << "    { const Index q = " << q << "; c[" << ds << "] = (t - q * " << divisor(d) << ")"
          << (d == inner() ? " * V" : "") << "; t = q; }\n";
    }
    os_ << "    c[0] = t" << (inner() == 0 ? " * V" : "") << ";\n    (void)p;\n  }\n";
  }

  void emit_load() {
    os_ << "  template <int V>\n  __device__ __forceinline__ static void load(const dg::PointwiseParams& p, "
           "const Index (&c)[kRank], Loaded<V>& l) {\n";
    for (const auto& in : prog_.code) {
      if (in.kind != expr::InstrKind::LOAD) continue;
      const int k = L_.operand_of(in.tensor);
      const Operand& op = L_.operands[static_cast<size_t>(k)];
      const std::string ks = std::to_string(k), r = "l.r" + std::to_string(in.dst);
      os_ << "    { const Index o = " << offset(k) << ";\n";
      if (op.inner == Access::VEC) {
        os_ << "      dg::load_vec<" << dt(op.dtype) << ", V>(p.ptr[" << ks << "], o, " << r << "); }\n";
      } else if (op.inner == Access::BCAST) {
        os_ << "      " << r << "[0] = dg::load_one<" << dt(op.dtype) << ">(p.ptr[" << ks << "], o); }\n";
      } else {
        os_ << "#pragma unroll\n      for (int j = 0; j < V; ++j) " << r << "[j] = dg::load_one<" << dt(op.dtype)
            << ">(p.ptr[" << ks << "], o + j * " << stride(k, inner()) << "); }\n";
      }
    }
    os_ << "    (void)p; (void)c; (void)l;\n  }\n";
  }

  // apply: the chain with its stores and reductions; to_regs: apply_regs, whose STORE writes the
  // value to out[0..V) (the caller stores it) and whose full reductions take the value only where
  // `live` (a select, not a branch: the caller's elements past the output's edges are not live).
  bool emit_apply(bool to_regs, std::string& why) {
    os_ << "  template <int V>\n  __device__ __forceinline__ static void " << (to_regs ? "apply_regs" : "apply")
        << "(const dg::PointwiseParams& p, const Index (&c)[kRank], const Loaded<V>& l, const float* anchor, float* red"
        << (to_regs ? ", float* out, bool live" : "") << ") {\n";
    int full_index = 0;
    for (const auto& in : prog_.code) {
      switch (in.kind) {
        case expr::InstrKind::APPLY: {
          std::string e;
          const std::string a = in.src[0] >= 0 ? ref(in.src[0], "j") : "0.0f";
          const std::string b = in.src[1] >= 0 ? ref(in.src[1], "j") : "0.0f";
          const std::string c = in.src[2] >= 0 ? ref(in.src[2], "j") : "0.0f";
          if (!pointwise_expr(in.op, a, b, c, e)) {
            why = "pointwise mode " + std::string(to_string(in.op.get_mode())) + " has no CUDA expression";
            return false;
          }
          const DataType round = rounding_of(in);
          if (round != DataType::NOT_SET) e = "dg::round_to<" + dt(round) + ">(" + e + ")";
          if (regs_[in.dst].wide) {
            decls_ << "    float r" << in.dst << "[V];\n";
            lanes_ << "      r" << in.dst << "[j] = " << e << ";\n";
          } else {
            flush_lanes();
            os_ << "    float r" << in.dst << "[1];\n    r" << in.dst << "[0] = " << e << ";\n";
          }
          break;
        }
        case expr::InstrKind::STORE:
          flush_lanes();
          if (to_regs)
            os_ << "#pragma unroll\n    for (int j = 0; j < V; ++j) out[j] = " << ref(in.src[0], "j") << ";\n";
          else
            emit_store(in);
          break;
        case expr::InstrKind::REDUCE: flush_lanes(); emit_reduce(in, full_index, to_regs); break;
        default: break;
      }
    }
    flush_lanes();
    os_ << "    (void)p; (void)c; (void)l; (void)anchor; (void)red;\n  }\n";
    return true;
  }

  void emit_store(const expr::Instr& in) {
    const int k = L_.operand_of(in.tensor);
    const Operand& op = L_.operands[static_cast<size_t>(k)];
    const std::string ks = std::to_string(k);
    if (op.inner == Access::VEC) {
      os_ << "    { float t[V];\n#pragma unroll\n      for (int j = 0; j < V; ++j) t[j] = " << ref(in.src[0], "j")
          << ";\n      dg::store_vec<" << dt(op.dtype) << ", V>(p.ptr[" << ks << "], " << offset(k) << ", t); }\n";
    } else {
      os_ << "    { const Index o = " << offset(k) << ";\n#pragma unroll\n      for (int j = 0; j < V; ++j) dg::store_one<"
          << dt(op.dtype) << ">(p.ptr[" << ks << "], o + j * " << stride(k, inner()) << ", " << ref(in.src[0], "j")
          << "); }\n";
    }
  }

  void emit_reduce(const expr::Instr& in, int& full_index, bool gated = false) {
    const int r = L_.reduction_of(in.tensor);
    const Reduction& red = L_.reductions[static_cast<size_t>(r)];
    const std::string M = rm(red.mode);
    const std::string input = "dg::reduce_input<" + M + ">(" + ref(in.src[0], "j") + ")";
    if (red.full) {
      const std::string f = std::to_string(full_index++);
      const std::string combined = "dg::reduce_combine<" + M + ">(red[" + f + "], " + input + ")";
      os_ << "#pragma unroll\n    for (int j = 0; j < V; ++j) red[" << f << "] = "
          << (gated ? "live ? " + combined + " : red[" + f + "]" : combined) << ";\n";
      return;
    }
    const int k = red.operand;
    const std::string acc = "p.acc[" + std::to_string(r) + "]";
    if (L_.operands[static_cast<size_t>(k)].inner == Access::BCAST) {
      // The V lanes share one output element: fold them first, then one (warp-aggregated) atomic.
      os_ << "    { float t = dg::reduce_identity<" << M << ">();\n#pragma unroll\n      for (int j = 0; j < V; ++j) t = "
          << "dg::reduce_combine<" << M << ">(t, " << input << ");\n      dg::reduce_partial<" << M << ">(" << acc << ", "
          << offset(k) << ", t); }\n";
    } else {
      os_ << "    { const Index o = " << offset(k) << ";\n#pragma unroll\n      for (int j = 0; j < V; ++j) dg::reduce_partial<"
          << M << ">(" << acc << ", o + j * " << stride(k, inner()) << ", " << input << "); }\n";
    }
  }

  void emit_full() {
    os_ << "  __device__ __forceinline__ static void init_full(float* red) {\n";
    int f = 0;
    for (const auto& r : L_.reductions)
      if (r.full) os_ << "    red[" << f++ << "] = dg::reduce_identity<" << rm(r.mode) << ">();\n";
    os_ << "    (void)red;\n  }\n";
    os_ << "  __device__ __forceinline__ static void finish_full(const dg::PointwiseParams& p, float* red) {\n";
    if (L_.full_count() > 0) os_ << "    __shared__ float scratch[32];\n";
    f = 0;
    for (size_t i = 0; i < L_.reductions.size(); ++i) {
      const auto& r = L_.reductions[i];
      if (!r.full) continue;
      os_ << "    dg::commit_full<" << rm(r.mode) << ", kDeterministic>(p, p.acc[" << i << "], " << f << ", red[" << f
          << "], scratch);\n";
      ++f;
    }
    os_ << "    (void)p; (void)red;\n  }\n";
  }
};

void emit_finalize(const Layout& L, std::ostringstream& os) {
  os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << kFinalizeKernel
     << "(const dg::PointwiseParams p, int blocks) {\n  __shared__ float scratch[32];\n  (void)scratch; (void)blocks;\n"
     << emit_finalize_calls(L, "blocks", L.deterministic) << "}\n";
}

}  // namespace

std::string emit_finalize_calls(const Layout& L, const std::string& blocks, bool deterministic) {
  std::ostringstream os;
  int f = 0;
  for (size_t i = 0; i < L.reductions.size(); ++i) {
    const auto& r = L.reductions[i];
    const std::string is = std::to_string(i);
    if (r.full) {
      if (!r.in_output)
        os << "  if (blockIdx.x == 0) dg::finalize_full<" << rm(r.mode) << ", " << dt(r.dtype) << ", "
           << (deterministic ? "true" : "false") << ">(p, p.acc[" << is << "], " << f << ", p.out[" << is << "], "
           << blocks << ", p.inv_count[" << is << "], scratch);\n";
      ++f;
    } else if (!r.in_output) {
      os << "  dg::finalize_partial<" << rm(r.mode) << ", " << dt(r.dtype) << ">(p, " << is << ", p.out[" << is << "]);\n";
    }
  }
  return os.str();
}

std::string emit_epilogue(const expr::Program& prog, const ir::Graph& g, const Layout& L, bool register_store) {
  std::string out, why;
  Emitter e(prog, g, L, register_store);
  if (!e.run(out, why)) return "#error \"" + why + "\"\n";
  return out;
}

std::string emit_pointwise(const expr::Program& prog, const ir::Graph& g, const Layout& L) {
  std::ostringstream os;
  // No sizes in comments: with dynamic shapes the text must not change with them (kernel cache key).
  os << "// Generated by dnngraph's CUDA emitter.\n"
     << "#include \"dg_pointwise.cuh\"\n#include \"dg_math.cuh\"\n\nnamespace dg_gen {\n"
     << emit_epilogue(prog, g, L) << "}  // namespace dg_gen\n\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << kVectorKernel
     << "(const dg::PointwiseParams p) {\n  dg::pointwise_main<dg_gen::Epilogue, " << L.vec << ", " << L.unroll
     << ">(p);\n}\n";
  if (L.vec > 1)
    os << "extern \"C\" __global__ void __launch_bounds__(" << kThreads << ") " << kScalarKernel
       << "(const dg::PointwiseParams p) {\n  dg::pointwise_main<dg_gen::Epilogue, 1, " << L.unroll << ">(p);\n}\n";
  if (L.needs_finalize()) emit_finalize(L, os);
  return os.str();
}

}  // namespace dnngraph::cuda::codegen
