#include "engines/cpu/conv/conv_geometry.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "engines/cpu/anchor_check.hpp"
#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu {
namespace {

template <class Attr>
void read_params(const Attr& a, ConvGeometry& g) {
  for (int i = 0; i < g.nsp; ++i) {
    const size_t u = static_cast<size_t>(i), d = static_cast<size_t>(3 - g.nsp + i);
    if (u < a.get_pre_padding().size()) g.pad[d] = a.get_pre_padding()[u];
    if (u < a.get_stride().size()) g.stride[d] = a.get_stride()[u];
    if (u < a.get_dilation().size()) g.dil[d] = a.get_dilation()[u];
  }
}

void read_tensor(const ir::Tensor& t, int nsp, std::array<int64_t, 5>& st, std::array<int64_t, 3>* sp) {
  st = {t.strides[0], t.strides[1], 0, 0, 0};
  for (int i = 0; i < nsp; ++i) {
    const size_t d = static_cast<size_t>(3 - nsp + i);
    st[2 + d] = t.strides[static_cast<size_t>(2 + i)];
    if (sp) (*sp)[d] = t.dims[static_cast<size_t>(2 + i)];
  }
}

int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// The phases and their tap lists (fprop: one phase of every position).
std::vector<ConvPhase> phase_taps(const ConvGeometry& g) {
  std::vector<ConvPhase> out;
  if (!g.dgrad) {
    ConvPhase p;
    for (size_t d = 0; d < 3; ++d) {
      p.count[d] = g.dst_sp[d];
      p.jstride[d] = g.stride[d];
      for (int64_t r = 0; r < g.ker[d]; ++r) {
        p.off[d].push_back(r * g.dil[d] - g.pad[d]);
        p.rtap[d].push_back(r);
      }
    }
    out.push_back(std::move(p));
    return out;
  }
  // dgrad: dst position i takes tap r when (i + pad - r * dil) is a multiple of the stride; for
  // i = rho + s * j that depends only on the phase rho, and src index = j + (rho + pad - r*dil)/s.
  // Phases at or past the dst size hold no position: a stride of 2^40 has as few phases as pixels.
  std::array<int64_t, 3> rho{0, 0, 0}, phases{0, 0, 0};
  for (size_t d = 0; d < 3; ++d) phases[d] = std::min(g.stride[d], g.dst_sp[d]);
  for (rho[0] = 0; rho[0] < phases[0]; ++rho[0])
    for (rho[1] = 0; rho[1] < phases[1]; ++rho[1])
      for (rho[2] = 0; rho[2] < phases[2]; ++rho[2]) {
        ConvPhase p;
        bool empty = false;
        for (size_t d = 0; d < 3; ++d) {
          p.start[d] = rho[d];
          p.step[d] = g.stride[d];
          p.count[d] = rho[d] < g.dst_sp[d] ? (g.dst_sp[d] - rho[d] + g.stride[d] - 1) / g.stride[d] : 0;
          p.jstride[d] = 1;
          for (int64_t r = 0; r < g.ker[d]; ++r) {
            const int64_t t = rho[d] + g.pad[d] - r * g.dil[d];
            if (floor_mod(t, g.stride[d]) != 0) continue;
            p.off[d].push_back((t - floor_mod(t, g.stride[d])) / g.stride[d]);
            p.rtap[d].push_back(r);
          }
          empty |= p.count[d] == 0;
        }
        if (!empty) out.push_back(std::move(p));
      }
  return out;
}

void fill_src_offsets(const ConvGeometry& g, ConvPhase& ph) {
  const int64_t taps = ph.taps();
  const size_t n1 = ph.off[1].size(), n2 = ph.off[2].size();
  ph.src_offset.resize(static_cast<size_t>(ph.pixels() * taps));
  int64_t* out = ph.src_offset.data();
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t j0 = 0; j0 < ph.count[0]; ++j0)
      for (int64_t j1 = 0; j1 < ph.count[1]; ++j1)
        for (int64_t j2 = 0; j2 < ph.count[2]; ++j2) {
          const size_t ut = static_cast<size_t>(t);
          const int64_t pos[3] = {j0 * ph.jstride[0] + ph.off[0][ut / (n1 * n2)],
                                  j1 * ph.jstride[1] + ph.off[1][(ut / n2) % n1], j2 * ph.jstride[2] + ph.off[2][ut % n2]};
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < 3; ++d) {
            inside &= pos[d] >= 0 && pos[d] < g.src_sp[d];
            off += pos[d] * g.src_st[2 + d];
          }
          *out++ = inside ? off : ConvPhase::kOutside;
        }
}

}  // namespace

void ConvGeometry::init(const ir::Graph& g, const ir::Node& node) {
  dgrad = std::holds_alternative<ConvDgradAttr>(node.attr);
  wgrad = std::holds_alternative<ConvWgradAttr>(node.attr);
  src = wgrad ? node.inputs[1] : node.inputs[0];  // wgrad: DY, X -> DW, as the fprop X -> DY with DW
  wei = wgrad ? node.outputs[0] : node.inputs[1];
  dst = wgrad ? node.inputs[0] : node.outputs[0];
  const ir::Tensor &s = g.tensor(src), &w = g.tensor(wei), &d = g.tensor(dst);
  nsp = s.rank() - 2;
  if (dgrad) read_params(std::get<ConvDgradAttr>(node.attr), *this);
  else if (wgrad) read_params(std::get<ConvWgradAttr>(node.attr), *this);
  else read_params(std::get<ConvFpropAttr>(node.attr), *this);
  n = s.dims[0];
  src_c = s.dims[1];
  dst_c = d.dims[1];
  // Weights are [K, C/groups, taps]: K is Y's channels in fprop, DY's (src) in dgrad.
  const int64_t c_total = dgrad ? dst_c : src_c;
  groups = c_total / w.dims[1];
  src_cg = src_c / groups;
  dst_cg = dst_c / groups;
  read_tensor(s, nsp, src_st, &src_sp);
  read_tensor(d, nsp, dst_st, &dst_sp);
  read_tensor(w, nsp, wei_st, &ker);
  src_t = s.dtype;
  wei_t = w.dtype;
  dst_t = d.dtype;
}

int64_t ConvGeometry::wei_offset(int64_t g, int64_t ic, int64_t oc, int64_t t) const {
  const int64_t r2 = t % ker[2], r1 = (t / ker[2]) % ker[1], r0 = t / (ker[1] * ker[2]);
  const int64_t sp = r0 * wei_st[2] + r1 * wei_st[3] + r2 * wei_st[4];
  if (dgrad) return (g * src_cg + ic) * wei_st[0] + oc * wei_st[1] + sp;
  return (g * dst_cg + oc) * wei_st[0] + ic * wei_st[1] + sp;
}

void ConvGeometry::dst_coord(int64_t nn, int64_t c, const int64_t* o, int64_t* coord) const {
  coord[0] = nn;
  coord[1] = c;
  for (int i = 0; i < nsp; ++i) coord[2 + i] = o[3 - nsp + i];
}

std::vector<ConvPhase> conv_phases(const ConvGeometry& g, int64_t max_offsets) {
  std::vector<ConvPhase> out = phase_taps(g);
  for (ConvPhase& ph : out) {
    int64_t offsets = 0;  // pixels x taps may overflow: then the taps are resolved per row
    if (checked::mul(ph.pixels(), ph.taps(), offsets) && offsets <= max_offsets) fill_src_offsets(g, ph);
  }
  return out;
}

bool check_conv_fprop(const Partition& p, const Target& t, Epilogue& epi, std::string& why, const ConvRule& rule) {
  const ir::Node* n = check_anchor(p, t, "conv_fprop", epi, why);
  if (!n) return false;
  ConvGeometry g;
  g.init(*p.graph, *n);
  const std::string broken = rule(g);
  if (broken.empty()) return true;
  why = "node '" + n->name + "': " + broken;
  return false;
}

DirectOutput direct_output(const ConvGeometry& g, const Epilogue& epi, const EpilogueRun& run,
                           const std::vector<void*>& ptrs) {
  DirectOutput o;
  if (g.dgrad) return o;
  if (epi.plain_fp32_store() == g.dst && g.dst_st[1] == 1) {
    o.base = static_cast<float*>(ptrs[static_cast<size_t>(g.dst)]);
    o.st = g.dst_st;
  } else if (epi.in_place() && run.in_place_safe()) {
    const auto& cs = epi.chain_store_strides();  // [n, c, spatial...]: rank 2 + nsp
    o.st = {cs[0], cs[1], 0, 0, 0};
    for (int i = 0; i < g.nsp; ++i) o.st[static_cast<size_t>(2 + 3 - g.nsp + i)] = cs[static_cast<size_t>(2 + i)];
    if (o.st[1] == 1) {
      o.base = static_cast<float*>(ptrs[static_cast<size_t>(epi.chain_store())]);
      o.chain = true;
    }
  }
  return o;
}

OutputRow::OutputRow(const ConvGeometry& g, int64_t row, const DirectOutput& out, std::vector<float>& scratch)
    : n(row / (g.dst_sp[0] * g.dst_sp[1])),
      o{(row / g.dst_sp[1]) % g.dst_sp[0], row % g.dst_sp[1], 0},
      out_off(out.offset(n, o)) {
  if (out.base) {
    acc = out.base + out_off;
    ldo = out.st[4];
    return;
  }
  scratch.resize(static_cast<size_t>(g.dst_sp[2] * g.dst_c));
  acc = scratch.data();
  ldo = g.dst_c;
}

void OutputRow::finish(const ConvGeometry& g, const DirectOutput& out, EpilogueRun& run, int slot, bool chain_done) const {
  const int64_t OW = g.dst_sp[2], K = g.dst_c;
  if (out.chain && !chain_done) run.chain_rows(acc, ldo, OW, K, out_off, 0);
  if (out.base) return;
  int64_t p[3] = {o[0], o[1], 0}, coord[5];
  for (p[2] = 0; p[2] < OW; ++p[2]) {
    g.dst_coord(n, 0, p, coord);
    run.strip(slot, coord, 1, K, 1, acc + p[2] * K);
  }
}

void output_row_inputs(const ConvGeometry& g, const char* src, int64_t n, const int64_t* o, std::vector<TapRow>& rows,
                       std::vector<float>& converted) {
  const int64_t C = g.src_c, W = g.src_sp[2], es = size_of(g.src_t);
  const bool fp32 = g.src_t == DataType::FLOAT;
  rows.clear();
  if (!fp32) converted.resize(static_cast<size_t>(g.ker[0] * g.ker[1] * W * C));
  for (int64_t r0 = 0; r0 < g.ker[0]; ++r0)
    for (int64_t r1 = 0; r1 < g.ker[1]; ++r1) {
      const int64_t p0 = o[0] * g.stride[0] - g.pad[0] + r0 * g.dil[0];
      const int64_t p1 = o[1] * g.stride[1] - g.pad[1] + r1 * g.dil[1];
      if (p0 < 0 || p0 >= g.src_sp[0] || p1 < 0 || p1 >= g.src_sp[1]) continue;
      const int64_t off = n * g.src_st[0] + p0 * g.src_st[2] + p1 * g.src_st[3];
      TapRow t{nullptr, C, (r0 * g.ker[1] + r1) * g.ker[2]};
      if (fp32) {
        t.x = reinterpret_cast<const float*>(src) + off;
        t.px = g.src_st[4];
      } else {
        float* dst = converted.data() + static_cast<int64_t>(rows.size()) * W * C;
        for (int64_t iw = 0; iw < W; ++iw) gemm::convert_run(src + (off + iw * g.src_st[4]) * es, g.src_t, 1, C, dst + iw * C);
        t.x = dst;
      }
      rows.push_back(t);
    }
}

bool flat_pixels(const std::array<int64_t, 5>& st, const std::array<int64_t, 3>& sp, int64_t n, int64_t& ld) {
  ld = st[4];
  int64_t expect = ld;
  for (size_t d = 3; d-- > 0;) {
    if (sp[d] != 1 && st[2 + d] != expect) return false;
    expect *= sp[d];
  }
  return n == 1 || st[0] == expect;
}

}  // namespace dnngraph::cpu
