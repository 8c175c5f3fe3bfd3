#include "engines/cpu/layout/layout_copy.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "engines/cpu/cpu_engine.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/transpose_words.hpp"
#include "graph/layout_copies.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {
namespace {

// Rows [0, n) of kCols source rows (s + c * sld) interleaved into n packed destination rows of kCols
// words (an image's 2-4 channels, NCHW -> NHWC): with kCols a constant GCC vectorizes the
// interleave (AVX2 permutes); as the 32 x 32 tile's element loop a 3-channel 224 x 224 image took
// ~1 ns per element.
DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
template <int kCols>
void interleave_words(const uint32_t* s, int64_t sld, uint32_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
#pragma GCC unroll 4
    for (int c = 0; c < kCols; ++c) d[i * kCols + c] = s[c * sld + i];
}
void interleave_2(const uint32_t* s, int64_t sld, uint32_t* d, int64_t n) { interleave_words<2>(s, sld, d, n); }
void interleave_3(const uint32_t* s, int64_t sld, uint32_t* d, int64_t n) { interleave_words<3>(s, sld, d, n); }
void interleave_4(const uint32_t* s, int64_t sld, uint32_t* d, int64_t n) { interleave_words<4>(s, sld, d, n); }
DNNGRAPH_TARGET_END

constexpr int64_t kBytesPerChunk = 1 << 16;  // a parallel_for chunk moves about this much

// The offset of one side of a copy at block b and onwards: the block's coordinates over `dims`
// (the side's dims, its innermost one counted in blocks of `run` elements), advanced one block at
// a time.
class Odometer {
 public:
  Odometer(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t run, int64_t start)
      : dims_(dims), strides_(strides), idx_(dims.size(), 0) {
    dims_.back() /= run;
    strides_.back() *= run;
    for (size_t i = dims_.size(); i-- > 0;) {
      idx_[i] = start % dims_[i];
      start /= dims_[i];
      offset_ += idx_[i] * strides_[i];
    }
  }
  int64_t offset() const { return offset_; }
  void advance() {
    for (size_t i = dims_.size(); i-- > 0;) {
      offset_ += strides_[i];
      if (++idx_[i] < dims_[i]) return;
      offset_ -= idx_[i] * strides_[i];
      idx_[i] = 0;
    }
  }

 private:
  std::vector<int64_t> dims_, strides_, idx_;
  int64_t offset_ = 0;
};

// Blocks [b, e) of copy c, each `run` elements of `bytes` bytes.
template <int64_t kBytes>
void copy_blocks(const StridedCopy& c, int64_t run, int64_t b, int64_t e, const char* src, char* dst) {
  Odometer s(c.src_dims, c.src_strides, run, b), d(c.dst_dims, c.dst_strides, run, b);
  const size_t block_bytes = static_cast<size_t>(run * kBytes);
  for (int64_t i = b; i < e; ++i, s.advance(), d.advance()) {
    if (run == 1) std::memcpy(dst + d.offset() * kBytes, src + s.offset() * kBytes, kBytes);
    else std::memcpy(dst + d.offset() * kBytes, src + s.offset() * kBytes, block_bytes);
  }
}

// f(std::integral_constant<int64_t, bytes>): the copies' element sizes as template arguments.
template <class F>
void by_element_size(int64_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(std::integral_constant<int64_t, 1>{});
    case 2: return f(std::integral_constant<int64_t, 2>{});
    case 4: return f(std::integral_constant<int64_t, 4>{});
    default: return f(std::integral_constant<int64_t, 8>{});
  }
}

// A copy that transposes a plane: dim `a` is contiguous in the source and the last dim in the
// destination (NHWC -> NCHW, a matrix transposed). Element by element, every read (or every write)
// touches another cache line: 2.7 GB/s on 1x12544x64 fp32 with two cores. In kTile x kTile tiles
// both sides' lines stay in L1 while a tile moves.
constexpr int64_t kTile = 32;

struct PlaneTranspose {
  int64_t rows = 0, cols = 0;      // along dim a (contiguous in the source), along the last dim
  int64_t src_ld = 0, dst_ld = 0;  // the source's stride along the last dim, the destination's along a
  StridedCopy planes;              // the other dims: one element per plane (count: the planes)
  int64_t row_blocks() const { return (rows + kTile - 1) / kTile; }
  int64_t items() const { return planes.count * row_blocks(); }
};

bool plane_transpose(const StridedCopy& c, PlaneTranspose& t) {
  const size_t r = c.src_dims.size();
  if (r < 2 || c.src_dims != c.dst_dims || c.dst_strides.back() != 1 || c.src_strides.back() == 1) return false;
  size_t a = r;
  for (size_t d = 0; d + 1 < r; ++d)
    if (c.src_strides[d] == 1) a = d;
  if (a == r) return false;
  t.rows = c.src_dims[a];
  t.cols = c.src_dims.back();
  t.src_ld = c.src_strides.back();
  t.dst_ld = c.dst_strides[a];
  t.planes = {c.input, c.count / (t.rows * t.cols), 0, 0, {}, {}, {}, {}};
  for (size_t d = 0; d + 1 < r; ++d) {
    if (d == a) continue;
    t.planes.src_dims.push_back(c.src_dims[d]);
    t.planes.src_strides.push_back(c.src_strides[d]);
    t.planes.dst_strides.push_back(c.dst_strides[d]);
  }
  if (t.planes.src_dims.empty()) t.planes.src_dims = {1}, t.planes.src_strides = {0}, t.planes.dst_strides = {0};
  t.planes.dst_dims = t.planes.src_dims;
  return true;
}

// Items [b, e): item i is rows [kTile * (i % row_blocks), + kTile) of plane i / row_blocks, every column.
template <int64_t kBytes>
void transpose_items(const PlaneTranspose& t, int64_t b, int64_t e, const char* src, char* dst) {
  using Word = std::conditional_t<kBytes == 1, uint8_t,
                                  std::conditional_t<kBytes == 2, uint16_t, std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>;
  const StridedCopy& p = t.planes;
  const int64_t blocks = t.row_blocks();
  int64_t at_plane = -1;  // the plane s and d point at (an Odometer per item cost more than 32 rows of 3 words)
  const Word* s = nullptr;
  Word* d = nullptr;
  for (int64_t item = b; item < e; ++item) {
    const int64_t plane = item / blocks, i0 = (item % blocks) * kTile, i1 = std::min(t.rows, i0 + kTile);
    if (plane != at_plane) {
      const Odometer so(p.src_dims, p.src_strides, 1, plane), dof(p.dst_dims, p.dst_strides, 1, plane);
      s = reinterpret_cast<const Word*>(src) + so.offset();
      d = reinterpret_cast<Word*>(dst) + dof.offset();
      at_plane = plane;
    }
#if DNNGRAPH_SIMD_X86
    if constexpr (kBytes == 4) {
      if (t.cols >= 2 && t.cols <= 4 && t.dst_ld == t.cols && simd::words_transpose_available()) {  // AVX2
        constexpr void (*kInterleave[])(const uint32_t*, int64_t, uint32_t*, int64_t) = {interleave_2, interleave_3,
                                                                                       interleave_4};
        kInterleave[t.cols - 2](s + i0, t.src_ld, d + i0 * t.cols, i1 - i0);
        continue;
      }
    }
#endif
    for (int64_t j0 = 0; j0 < t.cols; j0 += kTile) {
      const int64_t j1 = std::min(t.cols, j0 + kTile);
      // 4-byte words: whole 8 x 8 blocks in registers (one 32-byte line piece per row each way),
      // the tile's ragged edge element by element.
      int64_t i8 = i0, j8 = j0;
#if DNNGRAPH_SIMD_X86
      if constexpr (kBytes == 4) {
        if (simd::words_transpose_available()) {
          i8 = i0 + (i1 - i0) / 8 * 8, j8 = j0 + (j1 - j0) / 8 * 8;
          for (int64_t i = i0; i < i8; i += 8)
            for (int64_t j = j0; j < j8; j += 8)
              simd::transpose_8x8_words(s + j * t.src_ld + i, t.src_ld, d + i * t.dst_ld + j, t.dst_ld);
        }
      }
#endif
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = i < i8 ? j8 : j0; j < j1; ++j) d[i * t.dst_ld + j] = s[j * t.src_ld + i];
    }
  }
}

struct CopyProgram {
  std::vector<StridedCopy> copies;
  std::vector<std::optional<PlaneTranspose>> tiled;  // by copy: its plane transpose, where it is one
  std::vector<int> inputs;  // tensor ids by the node's input slot
  int output = -1;
  int64_t element_bytes = 0;
};

class LayoutCopyPlan final : public Plan {
 public:
  explicit LayoutCopyPlan(CopyProgram prog) : prog_(std::move(prog)) {}

  Status execute(const ExecArgs& args) const override {
    char* dst = static_cast<char*>(args.ptrs[static_cast<size_t>(prog_.output)]);
    const int64_t bytes = prog_.element_bytes;
    for (size_t i = 0; i < prog_.copies.size(); ++i) {
      const StridedCopy& c = prog_.copies[i];
      const char* src = static_cast<const char*>(args.ptrs[static_cast<size_t>(prog_.inputs[static_cast<size_t>(c.input)])]);
      const char* s = src + c.src_offset * bytes;
      char* d = dst + c.dst_offset * bytes;
      if (const auto& t = prog_.tiled[i]) {
        const int64_t grain = std::max<int64_t>(1, kBytesPerChunk / (kTile * t->cols * bytes));
        args.handle.thread_pool().parallel_for(t->items(), [&](int64_t b, int64_t e) {
          by_element_size(bytes, [&](auto w) { transpose_items<decltype(w)::value>(*t, b, e, s, d); });
        }, grain);
        continue;
      }
      const int64_t run = contiguous_run(c), blocks = c.count / run;
      const int64_t grain = std::max<int64_t>(1, kBytesPerChunk / (run * bytes));
      args.handle.thread_pool().parallel_for(blocks, [&](int64_t b, int64_t e) {
        by_element_size(bytes, [&](auto w) { copy_blocks<decltype(w)::value>(c, run, b, e, s, d); });
      }, grain);
    }
    return {};
  }

 private:
  CopyProgram prog_;
};

class LayoutCopyEngine final : public CpuEngine<CopyProgram> {
 public:
  LayoutCopyEngine() : CpuEngine("cpu_layout_copy") {}

  double estimate_seconds(const Partition& p, const Target& t, const Knobs&) const override {
    // Every byte read and written once at about half the measured bandwidth; an element-wise copy
    // touches a cache line per element, and tiles of a plane transpose move at about half a
    // memcpy's rate (2026-12-06, 2 cores: 14-19 GB/s against ~35; 4-byte words in 8 x 8 register
    // blocks since, 1.7-2.3x that): rank them behind a memcpy.
    double penalty = 1.0;
    CopyProgram prog;
    std::string why;
    if (prepare(p, t, prog, why))
      for (size_t i = 0; i < prog.copies.size(); ++i)
        if (contiguous_run(prog.copies[i]) == 1) penalty = std::max(penalty, prog.tiled[i] ? 2.0 : 4.0);
    return penalty * roofline_seconds(0.0, partition_bytes(p), t.info(), 0.5, 2e-6);
  }

 private:
  bool prepare(const Partition& p, const Target& t, CopyProgram& out, std::string& why) const override {
    if (!on_cpu(t, why)) return false;
    if (p.nodes.size() != 1) {
      why = "node '" + p.node(0).name + "': the partition has " + std::to_string(p.nodes.size()) +
            " nodes; layout copies run one reshape, transpose, slice or concatenate";
      return false;
    }
    const ir::Node& n = p.node(0);
    if (!layout_as_copies(*p.graph, n, out.copies, why)) return false;
    for (const StridedCopy& c : out.copies) {
      PlaneTranspose t;
      out.tiled.push_back(plane_transpose(c, t) ? std::optional<PlaneTranspose>(std::move(t)) : std::nullopt);
    }
    const ir::Tensor& y = p.tensor(n.outputs[0]);
    for (int id : n.inputs) {
      const ir::Tensor& x = p.tensor(id);
      if (x.is_pass_by_value) {
        why = ir::describe(n) + ": input '" + x.name + "' is a pass-by-value scalar; layout copies read tensors";
        return false;
      }
      if (x.dtype != y.dtype) {
        why = ir::describe(n) + ": input '" + x.name + "' is " + std::string(to_string(x.dtype)) + " and output '" +
              y.name + "' is " + std::string(to_string(y.dtype)) + "; layout copies move bytes, a cast runs on ref";
        return false;
      }
      out.inputs.push_back(id);
    }
    out.output = y.id;
    out.element_bytes = size_of(y.dtype);
    if (out.element_bytes != 1 && out.element_bytes != 2 && out.element_bytes != 4 && out.element_bytes != 8) {
      why = ir::describe(n) + ": " + std::to_string(out.element_bytes) + "-byte elements; layout copies move 1, 2, 4 or 8";
      return false;
    }
    return true;
  }
  std::unique_ptr<Plan> make_plan(const Partition&, const Target&, CopyProgram prog, const Setting&) const override {
    return std::make_unique<LayoutCopyPlan>(std::move(prog));
  }
};

}  // namespace

const Engine& layout_copy_engine() { return engine_instance<LayoutCopyEngine>(); }

}  // namespace dnngraph::cpu
