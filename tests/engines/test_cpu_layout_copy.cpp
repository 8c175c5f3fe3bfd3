// cpu_layout_copy against ref: reshapes, transposes, slices and concatenations of seeded random
// shapes with random strides (gaps, any dim order) and every element size, exactly; large tensors
// that split across threads; the copies' merged dims and contiguous runs; every rejection reason.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "cpu_test_util.hpp"
#include "graph/graph_impl.hpp"
#include "graph/layout_copies.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
constexpr const char* kEngine = "cpu_layout_copy";

dg::DataType random_type(std::mt19937& rng) {
  static const dg::DataType kTypes[] = {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16,
                                        dg::DataType::DOUBLE};
  return kTypes[rng() % 4];
}

HostTensor input(const Dims& dims, dg::DataType t, std::mt19937& rng) {
  HostTensor h = ref_test::make_tensor(dims, ref_test::random_strides(dims, rng), t);
  h.randomize(rng, -4, 4);
  return h;
}
HostTensor output(const Dims& dims, dg::DataType t, std::mt19937& rng, bool packed) {
  return ref_test::make_tensor(dims, packed ? test_dims::packed(dims) : ref_test::random_strides(dims, rng), t);
}

void check(const std::vector<HostTensor>& in, const HostTensor& out,
           const std::function<dg::TensorPtr(dg::Graph&, const std::vector<dg::TensorPtr>&)>& op) {
  cpu_test::check_engine_vs_ref(kEngine, in, {out}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& xs) {
    return std::vector<dg::TensorPtr>{op(g, xs)};
  }, 0.0, 0.0);
}

TEST(CpuLayoutCopy, RandomReshapesMatchRef) {
  std::mt19937 rng(71);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const dg::DataType t = random_type(rng);
    HostTensor x = input(ref_test::random_dims(rng, 1 + rng() % 4, 7), t, rng);
    const Dims yd = ref_test::random_factorization(test_dims::volume(x.dims), 1 + rng() % 4, rng);
    check({x}, output(yd, t, rng, trial % 3 == 0),
          [&](dg::Graph& g, const auto& xs) { return g.reshape(xs[0], dg::ReshapeAttr().set_dim(yd)); });
  }
}

TEST(CpuLayoutCopy, RandomTransposesMatchRef) {
  std::mt19937 rng(72);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const dg::DataType t = random_type(rng);
    HostTensor x = input(ref_test::random_dims(rng, 1 + rng() % 5, 6), t, rng);
    Dims perm(x.dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Dims yd(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) yd[i] = x.dims[static_cast<size_t>(perm[i])];
    check({x}, output(yd, t, rng, trial % 2 == 0),
          [&](dg::Graph& g, const auto& xs) { return g.transpose(xs[0], dg::TransposeAttr().set_permutation(perm)); });
  }
}

TEST(CpuLayoutCopy, RandomSlicesMatchRef) {
  std::mt19937 rng(73);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const dg::DataType t = random_type(rng);
    HostTensor x = input(ref_test::random_dims(rng, 1 + rng() % 4, 8), t, rng);
    std::vector<std::pair<int64_t, int64_t>> slices(1 + rng() % x.dims.size());
    Dims yd = x.dims;
    for (size_t i = 0; i < slices.size(); ++i) {
      const int64_t a = static_cast<int64_t>(rng() % static_cast<uint32_t>(x.dims[i]));
      const int64_t b = a + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(x.dims[i] - a));
      slices[i] = {a, b};
      yd[i] = b - a;
    }
    check({x}, output(yd, t, rng, trial % 2 == 0),
          [&](dg::Graph& g, const auto& xs) { return g.slice(xs[0], dg::SliceAttr().set_slices(slices)); });
  }
}

TEST(CpuLayoutCopy, RandomConcatenationsMatchRef) {
  std::mt19937 rng(74);
  for (int trial = 0; trial < 30; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const dg::DataType t = random_type(rng);
    const Dims base = ref_test::random_dims(rng, 1 + rng() % 4, 6);
    const int64_t axis = static_cast<int64_t>(rng() % base.size());
    std::vector<HostTensor> xs;
    Dims yd = base;
    yd[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0, n = 1 + rng() % 3; i < n; ++i) {
      Dims d = base;
      d[static_cast<size_t>(axis)] = 1 + static_cast<int64_t>(rng() % 5);
      yd[static_cast<size_t>(axis)] += d[static_cast<size_t>(axis)];
      xs.push_back(input(d, t, rng));
    }
    check(xs, output(yd, t, rng, trial % 2 == 0), [&](dg::Graph& g, const auto& in) {
      return g.concatenate(in, dg::ConcatenateAttr().set_axis(axis));
    });
  }
}

// Long enough that the copy splits into many parallel_for chunks, packed (one memcpy run) and
// strided (element by element) on each side.
TEST(CpuLayoutCopy, LargeTensorsSplitAcrossThreads) {
  std::mt19937 rng(75);
  const Dims xd{8, 96, 33, 17};
  HostTensor packed_in = ref_test::make_tensor(xd, test_dims::packed(xd), dg::DataType::FLOAT);
  packed_in.randomize(rng, -1, 1);
  check({packed_in}, output({8 * 96, 33 * 17}, dg::DataType::FLOAT, rng, true),
        [&](dg::Graph& g, const auto& xs) { return g.reshape(xs[0], dg::ReshapeAttr().set_dim({8 * 96, 33 * 17})); });
  HostTensor nhwc = ref_test::make_tensor(xd, test_dims::channels_last(xd), dg::DataType::HALF);
  nhwc.randomize(rng, -1, 1);
  check({nhwc}, output({8, 33, 17, 96}, dg::DataType::HALF, rng, true), [&](dg::Graph& g, const auto& xs) {
    return g.transpose(xs[0], dg::TransposeAttr().set_permutation({0, 2, 3, 1}));
  });
}

// Transposes whose innermost dim changes (NHWC -> NCHW, a matrix transposed) move in 32 x 32
// tiles: planes off the tile size, several planes (batch dims, and a dim between the two),
// every element size, packed and gapped outputs.
TEST(CpuLayoutCopy, PlaneTransposesInTilesMatchRef) {
  std::mt19937 rng(76);
  struct Case {
    Dims x, perm;
  };
  const Case cases[] = {{{3, 45, 70}, {0, 2, 1}},  {{2, 37, 5, 66}, {0, 3, 1, 2}}, {{1, 100, 33}, {0, 2, 1}},
                        {{65, 31}, {1, 0}},         {{2, 33, 4, 40}, {0, 3, 2, 1}}, {{4, 1, 64, 9}, {3, 1, 2, 0}},
                        // 2-4 channels to NHWC (interleaved rows for 4-byte words), planes crossing tiles
                        {{2, 3, 17, 19}, {0, 2, 3, 1}}, {{3, 2, 40, 9}, {0, 2, 3, 1}}, {{3, 4, 5, 7}, {0, 2, 3, 1}}};
  for (dg::DataType t : {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::DOUBLE, dg::DataType::INT8})
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(to_string(t)) + " x " + test_dims::to_str(c.x));
      HostTensor x = ref_test::make_tensor(c.x, test_dims::packed(c.x), t);
      x.randomize(rng, -4, 4);
      Dims yd(c.perm.size());
      for (size_t i = 0; i < c.perm.size(); ++i) yd[i] = c.x[static_cast<size_t>(c.perm[i])];
      for (bool packed : {true, false})
        check({x}, output(yd, t, rng, packed),
              [&](dg::Graph& g, const auto& xs) { return g.transpose(xs[0], dg::TransposeAttr().set_permutation(c.perm)); });
    }
}

// The copies' form: a reshape between packed tensors is one run, and so is one between two
// channels-last tensors of the same memory order; NHWC -> NCHW walks element by element; a channel
// slice of NHWC copies runs of its channels.
TEST(CpuLayoutCopy, CopiesMergeDimsAndFindRuns) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 16, 4, 4}).set_stride(test_dims::channels_last({2, 16, 4, 4})));
  auto P = g.tensor(dg::TensorAttr().set_name("P").set_dim({2, 3, 5}).set_stride({15, 5, 1}));
  auto R = g.reshape(P, dg::ReshapeAttr().set_dim({6, 5}));
  auto T = g.transpose(X, dg::TransposeAttr().set_permutation({0, 1, 2, 3}));
  T->set_stride(test_dims::packed({2, 16, 4, 4}));
  auto S = g.slice(X, dg::SliceAttr().set_slices({{0, 2}, {4, 12}}));
  // A channels-last 5-D image of one frame reshaped to 4-D channels-last: the same memory order.
  auto V = g.tensor(dg::TensorAttr().set_name("V").set_dim({2, 16, 1, 4, 4}).set_stride({256, 1, 256, 64, 16}));
  auto Q = g.reshape(V, dg::ReshapeAttr().set_dim({2, 16, 4, 4}));
  Q->set_stride(test_dims::channels_last({2, 16, 4, 4}));
  for (auto& t : {R, T, S, Q}) t->set_output(true);
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(h).ok());
  const dg::ir::Graph& ir = *impl_of(g).ir;
  std::vector<std::vector<dg::StridedCopy>> copies;
  for (const auto& n : ir.nodes) {
    std::string why;
    copies.emplace_back();
    ASSERT_TRUE(dg::layout_as_copies(ir, n, copies.back(), why)) << why;
    ASSERT_EQ(copies.back().size(), 1u);
  }
  EXPECT_EQ(copies[0][0].src_dims, Dims{30});
  EXPECT_EQ(dg::contiguous_run(copies[0][0]), 30);
  EXPECT_EQ(dg::contiguous_run(copies[1][0]), 1);  // NHWC read in NCHW order
  EXPECT_EQ(copies[2][0].src_offset, 4);  // channel 4 of an NHWC tensor
  // The slice keeps X's NHWC strides: the copy walks channels innermost, runs of 8.
  EXPECT_EQ(dg::contiguous_run(copies[2][0]), 8);
  EXPECT_EQ(copies[3][0].src_dims, Dims{512});  // one run, not C outermost element by element
  EXPECT_EQ(dg::contiguous_run(copies[3][0]), 512);
}

TEST(CpuLayoutCopy, RefusesCastsAndOtherOps) {
  dg::Graph g;
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim({4, 6}).set_stride({6, 1}).set_data_type(dg::DataType::FLOAT));
  auto Y = g.transpose(X, dg::TransposeAttr().set_permutation({1, 0}).set_name("tr"));
  Y->set_output(true).set_data_type(dg::DataType::HALF);
  g.select_engines({kEngine, "ref"});
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(test_build::run_build_steps(g, h).ok());
  const std::string ex = g.explain();
  EXPECT_NE(ex.find("input 'X' is FLOAT and output"), std::string::npos) << ex;
  EXPECT_NE(ex.find("a cast runs on ref"), std::string::npos) << ex;

  dg::Graph r;
  auto A = r.tensor(dg::TensorAttr().set_name("A").set_dim({4}).set_stride({1}).set_data_type(dg::DataType::FLOAT));
  r.relu(A)->set_output(true);
  r.select_engines({kEngine, "ref"});
  ASSERT_TRUE(test_build::run_build_steps(r, h).ok());
  EXPECT_NE(r.explain().find("is not a layout op"), std::string::npos) << r.explain();
}

}  // namespace
