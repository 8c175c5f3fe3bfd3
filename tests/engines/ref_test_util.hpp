// Helpers for the reference-engine tests: strided host tensors with random layouts and types,
// NaN poisoning, a run through the public pipeline restricted to the ref engine, and comparison
// with tolerances by precision.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/build_steps.hpp"
#include "common/dims.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"

namespace ref_test {

namespace dg = dnngraph;
using test_dims::Dims;
using test_dims::volume;

// Calls fn(index) for every index of dims, row-major.
inline void for_each(const Dims& dims, const std::function<void(const Dims&)>& fn) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  Dims idx(dims.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    fn(idx);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

// A tensor in host memory with arbitrary strides, read and written by logical index. Built with
// dims and strides, every slot of its span (gaps included) holds NaN until written.
struct HostTensor {
  dg::DataType dtype = dg::DataType::FLOAT;
  Dims dims, strides;
  std::vector<unsigned char> bytes;

  HostTensor() = default;
  HostTensor(dg::DataType t, Dims d, Dims s) : dtype(t), dims(std::move(d)), strides(std::move(s)) {
    int64_t span = 1;
    for (size_t i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * strides[i];
    bytes.assign(static_cast<size_t>(span * dg::size_of(t)), 0);
    for (int64_t i = 0; i < span; ++i) dnngraph::dtype::store(bytes.data(), t, i, std::nan(""));
  }

  int64_t offset(const Dims& idx) const {
    int64_t o = 0;
    for (size_t i = 0; i < idx.size(); ++i) o += idx[i] * strides[i];
    return o;
  }
  double get(const Dims& idx) const { return dnngraph::dtype::load(bytes.data(), dtype, offset(idx)); }
  void set(const Dims& idx, double v) { dnngraph::dtype::store(bytes.data(), dtype, offset(idx), v); }
  void* data() { return bytes.data(); }
  // Every element as a double, in row-major order of dims.
  std::vector<double> values() const {
    std::vector<double> v;
    v.reserve(static_cast<size_t>(volume(dims)));
    for_each(dims, [&](const Dims& idx) { v.push_back(get(idx)); });
    return v;
  }
  // Stores `row_major` (one value per element, row-major) in this tensor's type.
  void assign(const std::vector<double>& row_major) {
    size_t n = 0;
    for_each(dims, [&](const Dims& idx) { set(idx, row_major[n++]); });
  }
  // Stores uniform random values in [lo, hi), drawn in row-major order, and returns them as stored
  // (rounded to the dtype).
  std::vector<double> randomize(std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    for_each(dims, [&](const Dims& idx) { set(idx, u(rng)); });
    return values();
  }
  // Declares it in a graph as a user tensor with these dims, strides and type.
  dg::TensorPtr declare(dg::Graph& g, const std::string& name) const {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(dtype));
  }
  // Gives a node's output these dims, strides and type, and marks it an output.
  void describe(const dg::TensorPtr& t) const {
    t->set_dim(dims).set_stride(strides).set_data_type(dtype).set_output(true);
  }
};

// Packed strides in a random dim order, sometimes with a gap after one dim (a padded row).
inline Dims random_strides(const Dims& dims, std::mt19937& rng) {
  std::vector<size_t> order(dims.size());  // innermost first
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin(), order.end());
  if (rng() % 2) std::shuffle(order.begin(), order.end(), rng);
  const size_t gap_at = rng() % 3 == 0 ? rng() % dims.size() : dims.size();
  Dims strides(dims.size());
  int64_t running = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    strides[order[k]] = running;
    running *= dims[order[k]];
    if (k == gap_at) running += 3;
  }
  return strides;
}

// A tensor of `dims`, storage poisoned with NaN (every slot of its span, gaps included).
inline HostTensor make_tensor(const Dims& dims, const Dims& strides, dg::DataType t) { return {t, dims, strides}; }

inline HostTensor random_tensor(const Dims& dims, dg::DataType t, std::mt19937& rng, double lo = -2.0,
                                double hi = 2.0) {
  HostTensor h = make_tensor(dims, random_strides(dims, rng), t);
  h.randomize(rng, lo, hi);
  return h;
}

inline dg::DataType random_float_type(std::mt19937& rng) {
  static const dg::DataType kTypes[] = {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16};
  return kTypes[rng() % 3];
}

// Splits `total` into `rank` random factors (a reshape's target dims).
inline Dims random_factorization(int64_t total, size_t rank, std::mt19937& rng) {
  Dims d(rank, 1);
  for (int64_t p = 2; total > 1; ++p)
    while (total % p == 0) {
      d[rng() % rank] *= p;
      total /= p;
    }
  return d;
}

inline Dims random_dims(std::mt19937& rng, size_t rank, int64_t max_dim) {
  Dims d(rank);
  for (auto& v : d) v = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(max_dim));
  return d;
}

// Relative tolerance of a result stored in type t (about two roundings of t).
inline double tolerance(dg::DataType t) {
  switch (t) {
    case dg::DataType::HALF: return 3e-3;
    case dg::DataType::BFLOAT16: return 1e-2;
    default: return 1e-5;
  }
}

// Expects every element of got to be within tol * max(|want|, floor) of want(index); tol < 0
// means the tolerance of got's type. Reports the first few mismatches.
inline void expect_near(const HostTensor& got, const std::function<double(const Dims&)>& want, double tol = -1.0,
                        double floor = 1e-3) {
  if (tol < 0) tol = tolerance(got.dtype);
  int bad = 0;
  for_each(got.dims, [&](const Dims& idx) {
    const double g = got.get(idx), w = want(idx);
    const bool ok = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w) ||
                    std::fabs(g - w) <= tol * std::max(std::fabs(w), floor);
    if (!ok && bad++ < 5) {
      std::string s;
      for (int64_t v : idx) s += std::to_string(v) + " ";
      ADD_FAILURE() << "at [ " << s << "] got " << g << " want " << w << " (" << dg::to_string(got.dtype) << ")";
    }
  });
}

// Runs g on the ref engine (selected by name) through the five build steps and execute, and
// checks that plan 0 is ref's.
inline dg::Status run_on_ref(dg::Graph& g, const dg::VariantPack& pack) {
  dg::Handle handle(dg::Device::cpu());
  if (auto s = test_build::build_on_ref(g, handle); !s.ok()) return s;
  std::string name;
  if (auto s = g.get_plan_name_at_index(0, name); !s.ok()) return s;
  if (name.find("ref") != 0) return {dg::ErrorCode::INTERNAL_ERROR, "plan 0 is '" + name + "', not ref"};
  int64_t ws = 0;
  if (auto s = g.get_workspace_size(ws); !s.ok()) return s;
  std::vector<unsigned char> workspace(static_cast<size_t>(ws) + 1);
  return g.execute(handle, pack, workspace.data(), ws);
}

using Build = std::function<std::vector<dg::TensorPtr>(dg::Graph&, const std::vector<dg::TensorPtr>&)>;

// Declares `inputs` in g as "in0", "in1".. (bound in pack to their data), adds the outputs `build`
// makes from them, gives those the dims, strides and types of `outs` and binds them to `results`
// (copies of outs). Returns the outputs; `ins`, when given, receives the inputs.
inline std::vector<dg::TensorPtr> declare_graph(dg::Graph& g, std::vector<HostTensor>& inputs,
                                                const std::vector<HostTensor>& outs, const Build& build,
                                                std::vector<HostTensor>& results, dg::VariantPack& pack,
                                                std::vector<dg::TensorPtr>* ins = nullptr) {
  std::vector<dg::TensorPtr> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(inputs[i].declare(g, "in" + std::to_string(i)));
    pack[in.back()] = inputs[i].data();
  }
  auto out = build(g, in);
  results = outs;
  for (size_t i = 0; i < out.size(); ++i) {
    outs[i].describe(out[i]);
    pack[out[i]] = results[i].data();
  }
  if (ins) *ins = std::move(in);
  return out;
}

// Runs the graph `build` makes (declared as declare_graph does) on ref; `want` receives its outputs.
inline dg::Status run_build_on_ref(std::vector<HostTensor>& inputs, const std::vector<HostTensor>& outs,
                                   const Build& build, std::vector<HostTensor>& want) {
  dg::Graph g;
  dg::VariantPack pack;
  declare_graph(g, inputs, outs, build, want, pack);
  return run_on_ref(g, pack);
}

// Builds y = op(x) with x declared as "X" and y described as the output, and runs it on ref.
inline dg::Status run_one_op_on_ref(HostTensor& x, HostTensor& y,
                                    const std::function<dg::TensorPtr(dg::Graph&, const dg::TensorPtr&)>& op) {
  dg::Graph g;
  auto X = x.declare(g, "X");
  auto Y = op(g, X);
  y.describe(Y);
  return run_on_ref(g, {{X, x.data()}, {Y, y.data()}});
}

}  // namespace ref_test
