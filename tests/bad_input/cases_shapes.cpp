// Shapes at and past the limits, on relu(X) and relu(X) + Z: dims near 2^63, products that wrap
// (2^32 x 2^32), huge, negative and zero strides, spans beyond 2^48 bytes, wrong stride counts, and
// output layouts that overlap (directly, or only once int64 wraps around). The expected verdict is
// computed here in 128-bit arithmetic, independently of the library's checked helpers.
#include <algorithm>
#include <climits>
#include <set>

#include "bad_input/cases.hpp"

namespace bad_input {
namespace {

using dg::DataType;
using dg::ErrorCode;

const Dims kExtremes{0,
                     -1,
                     INT64_MIN,
                     INT64_MAX,
                     INT64_MAX - 1,
                     int64_t{1} << 62,
                     kLimit,
                     kLimit + 1,
                     int64_t{1} << 32,
                     int64_t{1} << 24,
                     3,
                     1};

std::string str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

// What validation must say about tensor `t` of node `node` (dims, then strides, then span).
Expect judge_layout(const Dims& dims, const Dims& strides, DataType type, const std::string& where) {
  if (dims.size() > 16) return rejected(ErrorCode::INVALID_VALUE, where, "is above 16, the most a tensor may have");
  for (int64_t d : dims) {
    if (d < 1) return rejected(ErrorCode::INVALID_VALUE, where, "dims " + str(dims) + " must all be >= 1");
    if (d > kLimit) return rejected(ErrorCode::INVALID_VALUE, where, "hold a dim above 2^48");
  }
  Wide volume = 1;
  for (int64_t d : dims) volume = std::min<Wide>(volume * d, Wide{1} << 100);
  if (volume > kLimit) return rejected(ErrorCode::INVALID_VALUE, where, "hold more than 2^48 elements");
  if (strides.size() != dims.size())
    return rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, where,
                    "has " + std::to_string(dims.size()) + " dims but " + std::to_string(strides.size()) + " strides");
  for (int64_t s : strides) {
    if (s < 0) return rejected(ErrorCode::INVALID_VALUE, where, "strides " + str(strides) + " must not be negative");
    if (s > kLimit) return rejected(ErrorCode::INVALID_VALUE, where, "hold a stride above 2^48");
  }
  Wide last = 0;
  for (size_t i = 0; i < dims.size(); ++i) last += Wide{dims[i] - 1} * strides[i];
  if ((last + 1) * dg::size_of(type) > kLimit)
    return rejected(ErrorCode::INVALID_VALUE, where, "span more than 2^48 bytes, the most a tensor may address");
  return (last + 1) <= (1 << 16) ? runs() : plans_only();
}

// Whether two in-bounds indices share an offset, by listing every offset (small tensors only).
bool shares_offsets(const Dims& dims, const Dims& strides) {
  std::set<int64_t> seen;
  Dims idx(dims.size(), 0);
  for (;;) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k) off += idx[k] * strides[k];
    if (!seen.insert(off).second) return true;
    size_t k = dims.size();
    while (k-- > 0 && ++idx[k] == dims[k]) idx[k] = 0;
    if (k == SIZE_MAX) return false;
  }
}

// Whether the output layout is refused: two in-bounds indices share an offset (found by listing
// every offset), or the dims do not nest (each stride at least the extent of the dims inside it;
// [4,4] with strides [2,5] interleaves without sharing, and is refused too).
bool layout_refused(const Dims& dims, const Dims& strides) {
  std::vector<size_t> order;
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] > 1) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  Wide extent = 1;
  for (size_t k : order) {
    if (strides[k] < extent) return true;
    extent = Wide{strides[k]} * dims[k];
  }
  return shares_offsets(dims, strides);
}

std::string relu_where(const std::string& tensor) {
  return node_named("relu", "pointwise") + ", " + tensor_named(tensor);
}

// relu(X) with X of this layout; Y takes `y_strides` when given.
Case relu_case(std::string name, const Dims& dims, const Dims& strides, DataType type, Expect expect,
               const Dims& y_strides = {}) {
  auto build = [dims, strides, type, y_strides](dg::Graph& g) {
    auto y = g.pointwise(user_tensor(g, "X", dims, strides, type),
                         dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"));
    y->set_output(true).set_name("Y");
    if (!y_strides.empty()) y->set_stride(y_strides);
  };
  return Case{std::move(name), build, {}, std::move(expect)};
}

int64_t pick_extreme(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      return kExtremes[rng() % kExtremes.size()];
    case 1:
      return (int64_t{1} << (10 + rng() % 53)) + static_cast<int64_t>(rng() % 3) - 1;  // 2^k - 1 .. 2^k + 1
    default:
      return 1 + static_cast<int64_t>(rng() % 4);
  }
}

void add_dims_cases(std::vector<Case>& cases) {
  for (size_t i = 0; i < kExtremes.size(); ++i) {
    const Dims dims{kExtremes[i]};
    cases.push_back(relu_case("dim_" + std::to_string(i), dims, {1}, DataType::FLOAT,
                              judge_layout(dims, {1}, DataType::FLOAT, relu_where("X"))));
  }
  const std::vector<Dims> products{
      {int64_t{1} << 32, int64_t{1} << 32},
      {int64_t{1} << 24, int64_t{1} << 24},
      {int64_t{1} << 16, int64_t{1} << 32},
      {int64_t{1} << 31, int64_t{1} << 17},
      {int64_t{1} << 62, 4},
      {65536, 65536, 65536, 65536},
      {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
      {kLimit, 1},
      {1, kLimit},
      Dims(17, 1),
      Dims(16, 2)};
  for (size_t i = 0; i < products.size(); ++i) {
    const Dims& d = products[i];
    const Dims s = packed_strides(d);
    cases.push_back(relu_case("dims_product_" + std::to_string(i), d, s, DataType::FLOAT,
                              judge_layout(d, s, DataType::FLOAT, relu_where("X"))));
  }
  std::mt19937_64 rng(17);
  for (int i = 0; i < 40; ++i) {
    Dims d(1 + rng() % 5);
    for (auto& v : d) v = pick_extreme(rng);
    const Dims s = packed_strides(d);
    cases.push_back(relu_case("dims_random_" + std::to_string(i), d, s, DataType::FLOAT,
                              judge_layout(d, s, DataType::FLOAT, relu_where("X"))));
  }
}

void add_stride_cases(std::vector<Case>& cases) {
  const Dims extreme_strides{-1,
                             INT64_MIN,
                             0,
                             kLimit,
                             kLimit + 1,
                             int64_t{1} << 62,
                             INT64_MAX,
                             int64_t{1} << 46,
                             int64_t{1} << 45,
                             int64_t{1} << 44};
  const DataType types[] = {DataType::FLOAT, DataType::HALF, DataType::DOUBLE, DataType::INT8};
  std::mt19937_64 rng(23);
  for (int i = 0; i < 50; ++i) {
    Dims d(1 + rng() % 4);
    for (auto& v : d) v = 1 + static_cast<int64_t>(rng() % 4);
    Dims s = packed_strides(d);
    std::shuffle(s.begin(), s.end(), rng);
    s[rng() % s.size()] = extreme_strides[rng() % extreme_strides.size()];
    if (i % 10 == 9) s.push_back(1);  // one stride too many
    // INT8 relu is an integer op; keep the float types for spans that can run.
    const DataType t = types[rng() % 4];
    cases.push_back(relu_case("strides_" + std::to_string(i), d, s, t, judge_layout(d, s, t, relu_where("X"))));
  }
}

// Y's strides: permutations of packed (some with gaps), overlapping ones, and strides that only
// overlap once their products wrap around int64.
void add_output_layout_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(29);
  for (int i = 0; i < 50; ++i) {
    Dims d(2 + rng() % 2);
    for (auto& v : d) v = 2 + static_cast<int64_t>(rng() % 3);
    Dims ys(d.size());
    std::vector<size_t> order(d.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    int64_t running = 1;
    for (size_t k : order) {
      ys[k] = running;
      running *= d[k] + (rng() % 3 == 0 ? 1 : 0);  // sometimes a gap
    }
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 1) ys[rng() % ys.size()] = static_cast<int64_t>(rng() % 3);  // likely overlapping
    if (kind == 2) ys[order.back()] = int64_t{1} << (46 + rng() % 18);       // wraps once multiplied
    Expect e = judge_layout(d, ys, DataType::FLOAT, relu_where("Y"));
    if (e.verdict != Verdict::REJECTED && layout_refused(d, ys))
      e = rejected(ErrorCode::INVALID_VALUE, relu_where("Y"), "output strides " + str(ys) + " overlap");
    cases.push_back(relu_case("output_strides_" + std::to_string(i), d, packed_strides(d), DataType::FLOAT, e, ys));
  }
}

// X + Z with Z broadcast by zero strides or by dims of 1, and with ranks that disagree.
void add_broadcast_cases(std::vector<Case>& cases) {
  std::mt19937_64 rng(31);
  for (int i = 0; i < 20; ++i) {
    Dims d(2 + rng() % 3);
    for (auto& v : d) v = 1 + static_cast<int64_t>(rng() % 4);
    Dims zd = d, zs = packed_strides(d);
    const size_t k = rng() % d.size();
    const int kind = i % 4;
    if (kind == 1) zd[k] = 1;         // a dim of 1
    if (kind == 2) zd.push_back(2);   // a rank of its own
    if (kind == 3) zd[k] = d[k] + 1;  // a dim that disagrees (unless X's is 1)
    if (kind != 0) zs = packed_strides(zd);
    if (kind == 0) zs[k] = 0;  // a stride-0 broadcast view
    Expect e = runs();
    const std::string z_named = node_named("add", "pointwise") + ", " + tensor_named("Z");
    if (kind == 2) e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, z_named, "differs from the first input's rank");
    if (kind == 3 && d[k] != 1) e = rejected(ErrorCode::SHAPE_DEDUCTION_FAILED, z_named, "do not broadcast with");
    auto build = [d, zd, zs](dg::Graph& g) {
      auto x = user_tensor(g, "X", d, packed_strides(d));
      auto z = user_tensor(g, "Z", zd, zs);
      g.pointwise(x, z, dg::PointwiseAttr().set_mode(dg::PointwiseMode::ADD).set_name("add"))->set_output(true);
    };
    cases.push_back(Case{"broadcast_" + std::to_string(i), build, {}, e});
  }
}

}  // namespace

void add_shape_cases(std::vector<Case>& cases) {
  add_dims_cases(cases);
  add_stride_cases(cases);
  add_output_layout_cases(cases);
  add_broadcast_cases(cases);
}

}  // namespace bad_input
