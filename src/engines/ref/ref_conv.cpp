// Reference convolutions: fprop, dgrad and wgrad as direct loops in double, any strides, any
// dtype, groups, padding (read as 0), stride and dilation. 1D and 2D convolutions run as 3D ones
// with trailing spatial dims of size 1.
#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

constexpr int kRank = 5;  // N, C, and three spatial dims

// A View padded to rank 5: missing spatial dims have size 1 and stride 0.
struct Tensor5 {
  const View* view;
  int64_t dim[kRank];
  int64_t stride[kRank];

  explicit Tensor5(const View& v) : view(&v) {
    for (int i = 0; i < kRank; ++i) {
      const bool has = i < v.rank();
      dim[i] = has ? v.dims[static_cast<size_t>(i)] : 1;
      stride[i] = has ? v.strides[static_cast<size_t>(i)] : 0;
    }
  }
  int64_t offset(int64_t a, int64_t b, const int64_t* s) const {
    return a * stride[0] + b * stride[1] + s[0] * stride[2] + s[1] * stride[3] + s[2] * stride[4];
  }
  double load(int64_t a, int64_t b, const int64_t* s) const {
    return dtype::load(view->data, view->dtype, offset(a, b, s));
  }
  void store(int64_t a, int64_t b, const int64_t* s, double v) const {
    dtype::store(view->data, view->dtype, offset(a, b, s), v);
  }
};

// Padding, stride and dilation for three spatial dims (defaults where the attribute left them out).
struct Geometry {
  int64_t pre[3] = {0, 0, 0};
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};

  template <class Attr>
  explicit Geometry(const Attr& attr) {
    for (size_t i = 0; i < 3; ++i) {
      if (i < attr.get_pre_padding().size()) pre[i] = attr.get_pre_padding()[i];
      if (i < attr.get_stride().size()) stride[i] = attr.get_stride()[i];
      if (i < attr.get_dilation().size()) dilation[i] = attr.get_dilation()[i];
    }
  }
  // Input position read by output position o through kernel tap r, in spatial dim i.
  int64_t input_pos(int i, int64_t o, int64_t r) const { return o * stride[i] - pre[i] + r * dilation[i]; }
};

// Calls fn(idx) for every index of a 3D box.
template <class Fn>
void for_each_3d(const int64_t* dims, Fn&& fn) {
  int64_t idx[3];
  for (idx[0] = 0; idx[0] < dims[0]; ++idx[0])
    for (idx[1] = 0; idx[1] < dims[1]; ++idx[1])
      for (idx[2] = 0; idx[2] < dims[2]; ++idx[2]) fn(static_cast<const int64_t*>(idx));
}

// The input position of output o through tap r in every spatial dim; false if it lies in padding.
bool input_position(const Geometry& g, const Tensor5& in, const int64_t* o, const int64_t* r, int64_t* pos) {
  for (int i = 0; i < 3; ++i) {
    pos[i] = g.input_pos(i, o[i], r[i]);
    if (pos[i] < 0 || pos[i] >= in.dim[i + 2]) return false;
  }
  return true;
}

// Calls fn(i, j) for every i < rows and j < cols, the pairs spread over the pool.
template <class Fn>
void parallel_for_pairs(ThreadPool& pool, int64_t rows, int64_t cols, Fn&& fn) {
  pool.parallel_for(rows * cols, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) fn(job / cols, job % cols);
  });
}

// The channel groups of a convolution whose filter `w` is [K, C / groups, taps] over an image of
// `c` channels.
struct Groups {
  int64_t k_total, c_per_group, k_per_group;
  Groups(const Tensor5& w, int64_t c) : k_total(w.dim[0]), c_per_group(w.dim[1]), k_per_group(w.dim[0] / (c / w.dim[1])) {}
  // The first image channel of output channel k's group.
  int64_t first_channel(int64_t k) const { return (k / k_per_group) * c_per_group; }
};

}  // namespace

// Y[n, k, o] = sum over c in k's group and taps r of X[n, c, o * stride - pre + r * dilation] * W[k, c, r].
Status run(const ConvFpropAttr& attr, const NodeArgs& a) {
  const Tensor5 x(a.in[0]), w(a.in[1]), y(a.out[0]);
  const Geometry geo(attr);
  const Groups grp(w, x.dim[1]);
  parallel_for_pairs(a.pool, y.dim[0], grp.k_total, [&](int64_t n, int64_t k) {
    const int64_t c_base = grp.first_channel(k);
    for_each_3d(y.dim + 2, [&](const int64_t* o) {
      double acc = 0.0;
      int64_t pos[3];
      for (int64_t c = 0; c < grp.c_per_group; ++c)
        for_each_3d(w.dim + 2, [&](const int64_t* r) {
          if (input_position(geo, x, o, r, pos)) acc += x.load(n, c_base + c, pos) * w.load(k, c, r);
        });
      y.store(n, k, o, acc);
    });
  });
  return {};
}

// DX[n, c, i] = sum over k in c's group and taps r with i = o * stride - pre + r * dilation of
// DY[n, k, o] * W[k, c, r]: the adjoint of fprop, gathered per DX element.
Status run(const ConvDgradAttr& attr, const NodeArgs& a) {
  const Tensor5 dy(a.in[0]), w(a.in[1]), dx(a.out[0]);
  const Geometry geo(attr);
  const Groups grp(w, dx.dim[1]);
  parallel_for_pairs(a.pool, dx.dim[0], dx.dim[1], [&](int64_t n, int64_t c) {
    const int64_t group = c / grp.c_per_group, c_in_group = c % grp.c_per_group;
    for_each_3d(dx.dim + 2, [&](const int64_t* i) {
      double acc = 0.0;
      for_each_3d(w.dim + 2, [&](const int64_t* r) {
        int64_t o[3];
        for (int d = 0; d < 3; ++d) {
          const int64_t t = i[d] + geo.pre[d] - r[d] * geo.dilation[d];
          if (t < 0 || t % geo.stride[d] != 0) return;
          o[d] = t / geo.stride[d];
          if (o[d] >= dy.dim[d + 2]) return;
        }
        for (int64_t k = group * grp.k_per_group; k < (group + 1) * grp.k_per_group; ++k)
          acc += dy.load(n, k, o) * w.load(k, c_in_group, r);
      });
      dx.store(n, c, i, acc);
    });
  });
  return {};
}

// DW[k, c, r] = sum over n and output positions o of DY[n, k, o] * X[n, c, o * stride - pre + r * dilation].
Status run(const ConvWgradAttr& attr, const NodeArgs& a) {
  const Tensor5 dy(a.in[0]), x(a.in[1]), dw(a.out[0]);
  const Geometry geo(attr);
  const Groups grp(dw, x.dim[1]);
  parallel_for_pairs(a.pool, grp.k_total, grp.c_per_group, [&](int64_t k, int64_t c) {
    const int64_t c_in_x = grp.first_channel(k) + c;
    for_each_3d(dw.dim + 2, [&](const int64_t* r) {
      double acc = 0.0;
      int64_t pos[3];
      for (int64_t n = 0; n < dy.dim[0]; ++n)
        for_each_3d(dy.dim + 2, [&](const int64_t* o) {
          if (input_position(geo, x, o, r, pos)) acc += dy.load(n, k, o) * x.load(n, c_in_x, pos);
        });
      dw.store(k, c, r, acc);
    });
  });
  return {};
}

}  // namespace dnngraph::ref
