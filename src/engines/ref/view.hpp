// View: a strided tensor in host memory, read and written as double.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/dtype.hpp"
#include "graph/ir.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::ref {

struct View {
  DataType dtype = DataType::NOT_SET;
  std::vector<int64_t> dims, strides;
  void* data = nullptr;

  bool present() const { return data != nullptr; }
  int rank() const { return static_cast<int>(dims.size()); }
  int64_t volume() const {
    int64_t v = 1;
    for (int64_t d : dims) v *= d;
    return v;
  }
  int64_t offset(const int64_t* idx) const {
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i) o += idx[i] * strides[i];
    return o;
  }
  double at(const std::vector<int64_t>& idx) const { return dtype::load(data, dtype, offset(idx.data())); }
  void set(const std::vector<int64_t>& idx, double v) const { dtype::store(data, dtype, offset(idx.data()), v); }
  // Reads with numpy broadcasting: an index into a larger shape, size-1 dims of this view pinned to 0.
  double at_broadcast(const std::vector<int64_t>& idx) const {
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i) o += (dims[i] == 1 ? 0 : idx[i]) * strides[i];
    return dtype::load(data, dtype, o);
  }
  double scalar() const { return dtype::load(data, dtype, 0); }
};

// The operands of one node: views by slot (absent optional slots have data == nullptr).
struct NodeArgs {
  const ir::Graph& graph;
  const ir::Node& node;
  std::vector<View> in;
  std::vector<View> out;
  ThreadPool& pool;
};

// Row-major iteration over dims: calls fn(index) for every index.
template <class Fn>
void for_each_index(const std::vector<int64_t>& dims, Fn&& fn) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    fn(idx);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// The same, split over the pool by the outermost dim. One index vector per chunk, updated in place.
template <class Fn>
void parallel_for_each_index(ThreadPool& pool, const std::vector<int64_t>& dims, Fn&& fn) {
  if (dims.empty()) {
    std::vector<int64_t> idx;
    fn(idx);
    return;
  }
  int64_t inner_total = 1;
  for (size_t k = 1; k < dims.size(); ++k) inner_total *= dims[k];
  pool.parallel_for(dims[0], [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(dims.size(), 0);
    for (int64_t i = b; i < e; ++i) {
      std::fill(idx.begin(), idx.end(), 0);
      idx[0] = i;
      for (int64_t n = 0; n < inner_total; ++n) {
        fn(idx);
        for (size_t k = dims.size(); k-- > 1;) {
          if (++idx[k] < dims[k]) break;
          idx[k] = 0;
        }
      }
    }
  });
}

}  // namespace dnngraph::ref
