// Mode A's calibration: workload classes, the nearest-class lookup, the order it gives, and the
// shipped table's own consistency.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/calibration.hpp"
#include "planning/heuristics.hpp"

namespace dg = dnngraph;

namespace {

using dg::Precision;
using dg::SizeClass;
using dg::WorkloadFamily;

dg::TensorAttr nhwc(const char* name, std::vector<int64_t> d) {
  return dg::TensorAttr().set_name(name).set_dim(d).set_stride({d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]});
}

struct Planned {
  dg::Graph g;
  dg::Handle handle{dg::Device::cpu()};
  const dg::PartitionPlans& part(size_t i = 0) const { return impl_of(g).plans->parts.at(i); }
  void plan() {
    ASSERT_TRUE(g.validate().ok());
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  }
};

// conv (n, c, hw, k, r x r), groups = c / filter channels, then bias + ReLU.
void conv(Planned& p, int64_t c, int64_t k, int64_t r, int64_t filter_c, int64_t stride = 1,
          dg::DataType io = dg::DataType::FLOAT) {
  p.g.set_io_data_type(io).set_compute_data_type(dg::DataType::FLOAT);
  auto X = p.g.tensor(nhwc("X", {2, c, 12, 12}));
  auto W = p.g.tensor(nhwc("W", {k, filter_c, r, r}));
  auto B = p.g.tensor(nhwc("B", {1, k, 1, 1}));
  auto Y = p.g.relu(p.g.bias(p.g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({r / 2, r / 2})
                                                       .set_stride({stride, stride}).set_dilation({1, 1})), B));
  Y->set_output(true);
  p.plan();
}

dg::WorkloadClass class_of(const Planned& p) { return dg::classify(p.part().partition, impl_of(p.handle).info); }

TEST(Calibration, FamiliesFollowThePartitionsAnchor) {
  Planned c3, narrow, c1, strided1, grouped, mm, relu;
  conv(c3, 16, 96, 3, 16);
  conv(narrow, 16, 64, 3, 16);
  conv(c1, 16, 32, 1, 16);
  conv(strided1, 16, 32, 1, 16, 2);
  conv(grouped, 16, 16, 3, 1);
  EXPECT_EQ(class_of(c3).family, WorkloadFamily::CONV);
  EXPECT_EQ(class_of(narrow).family, WorkloadFamily::CONV_NARROW);  // one 64-wide tile covers K
  EXPECT_EQ(class_of(c1).family, WorkloadFamily::CONV_1X1);
  EXPECT_EQ(class_of(strided1).family, WorkloadFamily::CONV_NARROW);  // a strided 1x1 gathers, unlike a GEMM
  EXPECT_EQ(class_of(grouped).family, WorkloadFamily::CONV_GROUPED);

  mm.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto A = mm.g.tensor(dg::TensorAttr().set_name("A").set_dim({1, 8, 16}).set_stride({128, 16, 1}));
  auto Bm = mm.g.tensor(dg::TensorAttr().set_name("B").set_dim({1, 16, 4}).set_stride({64, 4, 1}));
  mm.g.matmul(A, Bm, dg::MatmulAttr())->set_output(true);
  mm.plan();
  EXPECT_EQ(class_of(mm).family, WorkloadFamily::MATMUL);

  relu.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  relu.g.relu(relu.g.tensor(dg::TensorAttr().set_name("X").set_dim({4, 4}).set_stride({4, 1})))->set_output(true);
  relu.plan();
  EXPECT_EQ(class_of(relu).family, WorkloadFamily::POINTWISE);
  EXPECT_EQ(class_of(relu).size, SizeClass::UNDER_2US);
}

TEST(Calibration, PrecisionIsTheAnchorsOperandWidth) {
  Planned f32, bf16, f16, i8;
  conv(f32, 16, 32, 3, 16);
  conv(bf16, 16, 32, 3, 16, 1, dg::DataType::BFLOAT16);
  conv(f16, 16, 32, 3, 16, 1, dg::DataType::HALF);
  EXPECT_EQ(class_of(f32).precision, Precision::SINGLE);
  EXPECT_EQ(class_of(bf16).precision, Precision::HALF);
  EXPECT_EQ(class_of(f16).precision, Precision::HALF);
  Planned tf32;
  tf32.g.set_allow_tf32(true);
  conv(tf32, 16, 32, 3, 16);
  EXPECT_EQ(class_of(tf32).precision, Precision::TF32);
  i8.g.set_io_data_type(dg::DataType::INT8).set_compute_data_type(dg::DataType::INT32);
  i8.g.relu(i8.g.tensor(dg::TensorAttr().set_name("X").set_dim({4, 4}).set_stride({4, 1})))->set_output(true);
  i8.plan();
  EXPECT_EQ(class_of(i8).family, WorkloadFamily::POINTWISE);
  EXPECT_EQ(class_of(i8).precision, Precision::BYTE);
}

TEST(Calibration, SizeClassesByIdealTime) {
  EXPECT_EQ(dg::size_class_of(0), SizeClass::UNDER_2US);
  EXPECT_EQ(dg::size_class_of(1.99e-6), SizeClass::UNDER_2US);
  EXPECT_EQ(dg::size_class_of(2e-6), SizeClass::UNDER_20US);
  EXPECT_EQ(dg::size_class_of(150e-6), SizeClass::UNDER_200US);
  EXPECT_EQ(dg::size_class_of(1.0), SizeClass::LARGER);
}

TEST(Calibration, NamesRoundTrip) {
  for (auto f : {WorkloadFamily::CONV, WorkloadFamily::CONV_NARROW, WorkloadFamily::CONV_1X1, WorkloadFamily::CONV_GROUPED, WorkloadFamily::CONV_DGRAD,
                 WorkloadFamily::CONV_WGRAD, WorkloadFamily::MATMUL, WorkloadFamily::SDPA, WorkloadFamily::NORM,
                 WorkloadFamily::POINTWISE}) {
    WorkloadFamily back = WorkloadFamily::POINTWISE;
    ASSERT_TRUE(dg::parse_family(dg::to_string(f), back)) << dg::to_string(f);
    EXPECT_EQ(back, f);
  }
  for (auto s : {SizeClass::UNDER_2US, SizeClass::UNDER_20US, SizeClass::UNDER_200US, SizeClass::LARGER}) {
    SizeClass back = SizeClass::LARGER;
    ASSERT_TRUE(dg::parse_size_class(dg::to_string(s), back));
    EXPECT_EQ(back, s);
  }
  for (auto p : {Precision::HALF, Precision::SINGLE, Precision::BYTE, Precision::TF32}) {
    Precision back = Precision::HALF;
    ASSERT_TRUE(dg::parse_precision(dg::to_string(p), back)) << dg::to_string(p);
    EXPECT_EQ(back, p);
  }
  WorkloadFamily f;
  EXPECT_FALSE(dg::parse_family("convolution", f));
  Precision p;
  EXPECT_FALSE(dg::parse_precision("fp32", p));
}

TEST(Calibration, LookupTakesTheSameClassElseTheNearestSize) {
  const auto H = Precision::HALF;
  const std::vector<dg::CalibrationEntry> table = {
      {"sm_90", "cudnn", WorkloadFamily::CONV, SizeClass::UNDER_2US, H, 3.0, 2},
      {"sm_90", "cudnn", WorkloadFamily::CONV, SizeClass::UNDER_200US, H, 1.2, 4},
      {"sm_90", "cudnn", WorkloadFamily::MATMUL, SizeClass::LARGER, H, 0.9, 1},
      {"sm_80", "cudnn", WorkloadFamily::CONV, SizeClass::UNDER_20US, H, 7.0, 1},
      {"sm_90", "cublaslt", WorkloadFamily::CONV, SizeClass::UNDER_20US, H, 5.0, 1},
      {"sm_90", "cudnn", WorkloadFamily::CONV, SizeClass::LARGER, Precision::SINGLE, 40.0, 1},
  };
  auto at = [&](std::string_view engine, WorkloadFamily f, SizeClass s) {
    return dg::calibration_for(table, "sm_90", engine, {f, s, H});
  };
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::CONV, SizeClass::UNDER_2US).factor, 3.0);
  EXPECT_TRUE(at("cudnn", WorkloadFamily::CONV, SizeClass::UNDER_2US).exact);
  // UNDER_20US is one step from both measured classes: the larger one wins the tie.
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::CONV, SizeClass::UNDER_20US).factor, 1.2);
  EXPECT_FALSE(at("cudnn", WorkloadFamily::CONV, SizeClass::UNDER_20US).exact);
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::CONV, SizeClass::LARGER).factor, 1.2);
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::MATMUL, SizeClass::UNDER_2US).factor, 0.9);
  // Nothing for this family, engine or device: the estimate stands.
  EXPECT_EQ(at("cudnn", WorkloadFamily::SDPA, SizeClass::LARGER).entry, nullptr);
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::SDPA, SizeClass::LARGER).factor, 1.0);
  EXPECT_DOUBLE_EQ(at("cuda_conv_implicit_gemm", WorkloadFamily::CONV, SizeClass::UNDER_20US).factor, 1.0);
  EXPECT_DOUBLE_EQ(dg::calibration_for(table, "cpu", "cudnn", {WorkloadFamily::CONV, SizeClass::UNDER_2US, H}).factor, 1.0);
  // Precisions never stand in for each other: an fp32 ratio is not a bf16 one, nor the reverse.
  EXPECT_DOUBLE_EQ(at("cudnn", WorkloadFamily::CONV, SizeClass::LARGER).factor, 1.2);
  const auto single = [&](SizeClass s) {
    return dg::calibration_for(table, "sm_90", "cudnn", {WorkloadFamily::CONV, s, Precision::SINGLE});
  };
  EXPECT_DOUBLE_EQ(single(SizeClass::LARGER).factor, 40.0);
  EXPECT_DOUBLE_EQ(single(SizeClass::UNDER_2US).factor, 40.0);  // the nearest size of its own precision
  EXPECT_EQ(dg::calibration_for(table, "sm_90", "cudnn", {WorkloadFamily::CONV, SizeClass::LARGER, Precision::BYTE}).entry,
            nullptr);
}

// A measured ratio moves an engine down mode A's list; its own candidates keep their order.
TEST(Calibration, MeasuredRatiosReorderModeA) {
  Planned p;
  conv(p, 16, 32, 3, 16);
  const auto& pp = p.part();
  std::set<int> engines;
  for (const auto& c : pp.candidates)
    if (c.engine_id != 0) engines.insert(c.engine_id);
  if (engines.size() < 2) GTEST_SKIP() << "one engine besides ref takes this conv:\n" << p.g.explain();
  const int first = pp.candidates.front().engine_id;
  std::vector<dg::Candidate> own;
  for (const auto& c : pp.candidates)
    if (c.engine_id == first) own.push_back(c);
  const std::string name(dg::engine_by_id(first)->name());
  const dg::WorkloadClass cls = class_of(p);
  const std::vector<dg::CalibrationEntry> table = {{"cpu", name.c_str(), cls.family, cls.size, cls.precision, 1e6, 1}};

  dg::PartitionPlans again = pp;
  dg::Target target;
  target.handle = &impl_of(p.handle);
  dg::order_candidates(again, target, {}, {dg::HeurMode::A}, table);
  EXPECT_NE(again.candidates.front().engine_id, first) << "a 1e6 measured ratio left " << name << " first";
  std::vector<dg::Candidate> after;
  for (const auto& c : again.candidates) {
    if (c.engine_id == first) {
      EXPECT_DOUBLE_EQ(c.calibration, 1e6);
      after.push_back(c);
    } else {
      EXPECT_DOUBLE_EQ(c.calibration, 1.0);
    }
  }
  ASSERT_EQ(after.size(), own.size());
  for (size_t i = 0; i < own.size(); ++i) EXPECT_EQ(after[i].knobs, own[i].knobs);
  EXPECT_EQ(again.candidates.back().engine_id, 0) << "ref stays last";
}

// The shipped table: engines this library has, classes it names once, ratios that are numbers.
TEST(Calibration, ShippedTableIsConsistent) {
  std::set<std::tuple<std::string, std::string, int, int, int>> seen;
  for (const auto& e : dg::calibration_table()) {
    EXPECT_GE(dg::engine_id_by_name(e.engine), 0) << e.engine;
    EXPECT_TRUE(std::isfinite(e.factor) && e.factor > 0) << e.engine << " " << e.factor;
    EXPECT_GE(e.samples, 1);
    EXPECT_TRUE(seen.emplace(e.device, e.engine, static_cast<int>(e.family), static_cast<int>(e.size),
                             static_cast<int>(e.precision)).second)
        << "twice: " << e.device << " " << e.engine << " " << dg::to_string(e.family) << " " << dg::to_string(e.size)
        << " " << dg::to_string(e.precision);
  }
}

}  // namespace
