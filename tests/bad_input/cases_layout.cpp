// Layout ops at the extremes: reshape dims whose product wraps (2^32 x 2^32 x 16, 2^62 x 4) or that
// hold two -1s or a 0; slices with INT64_MIN/INT64_MAX bounds; permutations with out-of-range and
// repeated entries; concatenates with bad axes, mismatched inputs, a thousand inputs, and sizes that
// sum past 2^48 (and past 2^64, which wraps to a tiny size unless the sum is checked).
#include <algorithm>
#include <numeric>

#include "bad_input/cases.hpp"

namespace bad_input {
namespace {

using dg::DataType;
using dg::ErrorCode;

int64_t pick(std::mt19937_64& rng, const Dims& extremes, int64_t small_lo, int64_t small_hi) {
  if (rng() % 3 == 0) return extremes[rng() % extremes.size()];
  return small_lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(small_hi - small_lo + 1));
}

// What reshape must say for X [4, 4] and these dims, in the order validation checks.
Expect judge_reshape(const Dims& dims) {
  const std::string where = node_named("r", "reshape");
  int holes = 0;
  Wide known = 1;
  for (int64_t d : dims) {
    if (d == -1)
      ++holes;
    else if (d < 1)
      return rejected(ErrorCode::INVALID_VALUE, where, "must be >= 1, or -1 for one inferred dim");
    else
      known = std::min<Wide>(known * d, Wide{INT64_MAX});
  }
  if (holes > 1) return rejected(ErrorCode::INVALID_VALUE, where, "at most one dim may be inferred");
  if (holes == 1 && 16 % known != 0)
    return rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("X"), "cannot infer the -1");
  if (holes == 0 && known != 16)
    return rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("X"), "but X [4,4] holds 16");
  return runs();
}

void add_reshape_cases(std::vector<Case>& cases) {
  const Dims extremes{-1, 0, -2, INT64_MIN, INT64_MAX, int64_t{1} << 32, int64_t{1} << 62, kLimit, 16, 4};
  std::vector<Dims> lists{{int64_t{1} << 32, int64_t{1} << 32, 16},
                          {int64_t{1} << 62, 4},
                          {-1, -1},
                          {0, 16},
                          {-1, 0},
                          {INT64_MIN},
                          {16},
                          {2, 8},
                          {-1, 8},
                          {INT64_MAX},
                          {-1, INT64_MAX},
                          {int64_t{1} << 62, int64_t{1} << 62, -1},
                          {1, 1, 1, 16, 1},
                          {-1}};
  std::mt19937_64 rng(53);
  for (int i = 0; i < 16; ++i) {
    Dims d(1 + rng() % 3);
    for (auto& v : d) v = pick(rng, extremes, 1, 4);
    lists.push_back(d);
  }
  for (size_t i = 0; i < lists.size(); ++i) {
    const Dims dims = lists[i];
    auto build = [dims](dg::Graph& g) {
      auto x = user_tensor(g, "X", {4, 4}, {4, 1});
      g.reshape(x, dg::ReshapeAttr().set_name("r").set_dim(dims))->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"reshape_" + std::to_string(i), build, {}, judge_reshape(dims)});
  }
}

void add_slice_cases(std::vector<Case>& cases) {
  const Dims extremes{INT64_MIN, -1, 0, 2, 6, 7, INT64_MAX};
  const std::string where = node_named("s", "slice");
  std::mt19937_64 rng(59);
  for (int i = 0; i < 24; ++i) {
    const Dims xd{6, 5};
    std::vector<std::pair<int64_t, int64_t>> slices(1 + rng() % (i % 6 == 5 ? 3 : 2));
    for (auto& [start, end] : slices) {
      start = pick(rng, extremes, 0, 3);
      end = pick(rng, extremes, 2, 6);
    }
    Expect e = runs();
    if (slices.size() > 2) {
      e = rejected(ErrorCode::INVALID_VALUE, where, "slice has 3 ranges but X has rank 2");
    } else {
      for (size_t k = 0; k < slices.size() && e.verdict == Verdict::RUNS; ++k) {
        const auto [start, end] = slices[k];
        if (start < 0 || end > xd[k])
          e = rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("X"), "is outside [0, ");
        else if (start >= end)
          e = rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("X"), "is empty");
      }
    }
    auto build = [xd, slices](dg::Graph& g) {
      auto x = user_tensor(g, "X", xd, {1, 6});  // column-major: the slice reads a strided view
      g.slice(x, dg::SliceAttr().set_name("s").set_slices(slices))->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"slice_" + std::to_string(i), build, {}, e});
  }
}

void add_transpose_cases(std::vector<Case>& cases) {
  const Dims extremes{INT64_MIN, -1, 3, INT64_MAX};
  const std::string where = node_named("t", "transpose");
  std::mt19937_64 rng(61);
  for (int i = 0; i < 20; ++i) {
    Dims perm(3);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Expect e = runs();
    if (i % 3 == 1) perm[rng() % 3] = extremes[rng() % extremes.size()];
    if (i % 3 == 2) perm[0] = perm[1];
    if (i % 7 == 6) perm.push_back(3);
    Dims sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (perm.size() != 3)
      e = rejected(ErrorCode::INVALID_VALUE, where, "has 4 entries but X has rank 3");
    else if (sorted != Dims{0, 1, 2})
      e = rejected(ErrorCode::INVALID_VALUE, where, "is not a permutation of 0..2");
    auto build = [perm](dg::Graph& g) {
      auto x = user_tensor(g, "X", {2, 3, 4}, {1, 2, 6});
      g.transpose(x, dg::TransposeAttr().set_name("t").set_permutation(perm))->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"transpose_" + std::to_string(i), build, {}, e});
  }
}

// `count` inputs of dims `each` (INT8), concatenated along axis 0.
Case concat_of(std::string name, size_t count, Dims each, Expect e, bool through_json = true) {
  auto build = [count, each](dg::Graph& g) {
    std::vector<dg::TensorPtr> xs;
    for (size_t i = 0; i < count; ++i)
      xs.push_back(user_tensor(g, "X" + std::to_string(i), each, packed_strides(each), DataType::INT8));
    g.concatenate(xs, dg::ConcatenateAttr().set_name("cat").set_axis(0))->set_output(true).set_name("Y");
  };
  return Case{std::move(name), build, {}, std::move(e), through_json};
}

void add_concatenate_cases(std::vector<Case>& cases) {
  const std::string where = node_named("cat", "concatenate");
  std::mt19937_64 rng(67);
  const Dims axes{-1, INT64_MIN, INT64_MAX, 3, 0, 1, 2};
  for (int i = 0; i < 24; ++i) {
    const size_t count = 1 + rng() % 6;
    const int64_t axis = axes[rng() % axes.size()];
    std::vector<Dims> dims(count, Dims{2, 3, 2});
    const bool mismatch = i % 5 == 4 && count > 1;
    for (auto& d : dims)
      if (axis >= 0 && axis < 3) d[static_cast<size_t>(axis)] = 1 + static_cast<int64_t>(rng() % 3);
    if (mismatch) dims.back()[axis == 1 ? 2 : 1] += 1;
    Expect e = runs();
    if (axis < 0 || axis >= 3)
      e = rejected(ErrorCode::INVALID_VALUE, where, "is outside [0, 3)");
    else if (mismatch)
      e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where + ", " + tensor_named("X" + std::to_string(count - 1)),
                   "differ from the first input's");
    auto build = [dims, axis](dg::Graph& g) {
      std::vector<dg::TensorPtr> xs;
      for (size_t k = 0; k < dims.size(); ++k)
        xs.push_back(user_tensor(g, "X" + std::to_string(k), dims[k], packed_strides(dims[k])));
      g.concatenate(xs, dg::ConcatenateAttr().set_name("cat").set_axis(axis))->set_output(true).set_name("Y");
    };
    cases.push_back(Case{"concatenate_" + std::to_string(i), build, {}, e});
  }
  cases.push_back(concat_of("concatenate_1000_inputs", 1000, {1, 3}, runs()));
  const Expect too_long =
      rejected(ErrorCode::INVALID_VALUE, where + ", " + tensor_named("X1"), "sizes along axis 0 sum to more than 2^48");
  cases.push_back(concat_of("concatenate_sum_above_2p48", 2, {kLimit, 1}, too_long));
  // 2^16 + 1 inputs of 2^48 rows: an unchecked int64 sum wraps to 2^48, a size that passes. The
  // JSON reader is not the point here (and reads 65537 tensors slowly): built in C++ only.
  cases.push_back(concat_of("concatenate_sum_wraps_int64", (size_t{1} << 16) + 1, {kLimit}, too_long, false));
}

}  // namespace

void add_layout_cases(std::vector<Case>& cases) {
  add_reshape_cases(cases);
  add_slice_cases(cases);
  add_transpose_cases(cases);
  add_concatenate_cases(cases);
}

}  // namespace bad_input
