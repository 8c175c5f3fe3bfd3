// Reference layout ops: each output element is copied from one input element. Equal types copy
// the bytes (exact for every value, NaN payloads and large integers included); others convert.
#include <cstring>

#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

void copy_element(const View& src, const std::vector<int64_t>& src_idx, const View& dst,
                  const std::vector<int64_t>& dst_idx) {
  if (src.dtype == dst.dtype) {
    const int64_t size = size_of(src.dtype);
    std::memcpy(static_cast<char*>(dst.data) + dst.offset(dst_idx.data()) * size,
                static_cast<const char*>(src.data) + src.offset(src_idx.data()) * size, static_cast<size_t>(size));
  } else {
    dst.set(dst_idx, src.at(src_idx));
  }
}

// Y[o] = X[src_index(o)] for every output index o: the layout ops with one input.
template <class SrcIndex>
Status gather(const NodeArgs& a, SrcIndex src_index) {
  const View& x = a.in[0];
  const View& y = a.out[0];
  parallel_for_each_index(a.pool, y.dims, [&](const std::vector<int64_t>& o) { copy_element(x, src_index(o), y, o); });
  return {};
}

}  // namespace

Status run(const ReshapeAttr&, const NodeArgs& a) {
  const std::vector<int64_t>& xd = a.in[0].dims;
  const std::vector<int64_t>& yd = a.out[0].dims;
  // Output element n (row-major) is input element n (row-major), whatever the strides.
  return gather(a, [&](const std::vector<int64_t>& o) {
    int64_t n = 0;
    for (size_t i = 0; i < o.size(); ++i) n = n * yd[i] + o[i];
    std::vector<int64_t> in_idx(xd.size());
    for (size_t i = xd.size(); i-- > 0;) {
      in_idx[i] = n % xd[i];
      n /= xd[i];
    }
    return in_idx;
  });
}

Status run(const TransposeAttr& attr, const NodeArgs& a) {
  const auto& perm = attr.get_permutation();
  return gather(a, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in_idx(o.size());
    for (size_t i = 0; i < o.size(); ++i) in_idx[static_cast<size_t>(perm[i])] = o[i];
    return in_idx;
  });
}

Status run(const SliceAttr& attr, const NodeArgs& a) {
  const auto& slices = attr.get_slices();
  return gather(a, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in_idx = o;
    for (size_t i = 0; i < slices.size(); ++i) in_idx[i] += slices[i].first;
    return in_idx;
  });
}

Status run(const ConcatenateAttr& attr, const NodeArgs& a) {
  const View& y = a.out[0];
  const size_t axis = static_cast<size_t>(attr.get_axis());
  int64_t offset = 0;  // where the current input starts along the axis
  for (const View& x : a.in) {
    parallel_for_each_index(a.pool, x.dims, [&](const std::vector<int64_t>& i) {
      std::vector<int64_t> out_idx = i;
      out_idx[axis] += offset;
      copy_element(x, i, y, out_idx);
    });
    offset += x.dims[axis];
  }
  return {};
}

}  // namespace dnngraph::ref
