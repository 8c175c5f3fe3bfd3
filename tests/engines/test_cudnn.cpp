// The cudnn vendor engine without a GPU: the library search (failures, the log of paths tried), the
// lowering of partitions to backend descriptors and the reading of cuDNN's heuristics, through a
// fake function table that records every descriptor (and through the real library where it is
// installed: descriptors need no GPU), the reasons the engine gives, and the admission rules of a
// plan's CUDA graphs by pointer set. The GPU tests are in test_cudnn_gpu.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/partitions.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/cudnn/graph_cache.hpp"
#include "engines/cudnn/op_graph.hpp"
#include "engines/cudnn_test_graphs.hpp"
#include "engines/test_cuda_util.hpp"
#include "engines/vendor_libraries.hpp"
#include "planning/plan_set.hpp"
#include "runtime/vendor_library.hpp"
#include "common/scoped_env.hpp"

namespace dnngraph::cudnn {
namespace {

namespace ct = dnngraph::cuda::testing;
namespace dg = dnngraph;
using namespace test_graphs;  // its graphs, and T for DataType

// ---------------------------------------------------------------- a fake cuDNN backend

struct FakeDesc {
  int type = -1;
  std::map<int, std::pair<int, std::vector<uint8_t>>> attrs;  // attribute -> (type, bytes)
  bool finalized = false;
  int64_t engine = -1;                          // ENGINE, ENGINECFG
  std::vector<std::pair<int, int64_t>> knobs;   // ENGINECFG
  int knob_type = -1;                           // KNOB_CHOICE
  int64_t knob_value = 0;

  std::vector<int64_t> i64s(Attr a) const {
    const auto& b = attrs.at(static_cast<int>(a)).second;
    std::vector<int64_t> v(b.size() / 8);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  }
  int enum_value(Attr a) const {
    int v = 0;
    std::memcpy(&v, attrs.at(static_cast<int>(a)).second.data(), 4);
    return v;
  }
  void* desc(Attr a, size_t i = 0) const {
    void* v = nullptr;
    std::memcpy(&v, attrs.at(static_cast<int>(a)).second.data() + 8 * i, 8);
    return v;
  }
  bool has(Attr a) const { return attrs.count(static_cast<int>(a)) != 0; }
};

// Heuristic results by mode: (engine, knobs) per config.
using FakeConfigs = std::vector<std::pair<int64_t, std::vector<std::pair<int, int64_t>>>>;

struct Fake {
  std::vector<std::unique_ptr<FakeDesc>> all;
  int fail_type = -1;  // finalize of this descriptor type fails with fail_status
  int fail_status = 0;
  std::map<int, FakeConfigs> heuristics;  // by HeurMode
  std::vector<const FakeDesc*> of(Desc t) const {
    std::vector<const FakeDesc*> out;
    for (const auto& d : all)
      if (d->type == static_cast<int>(t)) out.push_back(d.get());
    return out;
  }
};
Fake* g_fake = nullptr;

size_t element_size(int type) {
  switch (static_cast<AttrType>(type)) {
    case AttrType::BOOLEAN:
    case AttrType::CHAR: return 1;
    case AttrType::FLOAT:
    case AttrType::DATA_TYPE:
    case AttrType::CONVOLUTION_MODE:
    case AttrType::HEUR_MODE:
    case AttrType::KNOB_TYPE:
    case AttrType::POINTWISE_MODE:
    case AttrType::REDUCTION_OPERATOR_TYPE:
    case AttrType::NUMERICAL_NOTE:
    case AttrType::BEHAVIOR_NOTE: return 4;
    default: return 8;
  }
}

cudnnStatus_t fake_create(int type, BackendDescriptor* d) {
  g_fake->all.push_back(std::make_unique<FakeDesc>());
  g_fake->all.back()->type = type;
  *d = g_fake->all.back().get();
  return STATUS_SUCCESS;
}
cudnnStatus_t fake_destroy(BackendDescriptor) { return STATUS_SUCCESS; }
cudnnStatus_t fake_finalize(BackendDescriptor d) {
  auto* f = static_cast<FakeDesc*>(d);
  if (f->type == g_fake->fail_type) return g_fake->fail_status;
  f->finalized = true;
  return STATUS_SUCCESS;
}
cudnnStatus_t fake_set(BackendDescriptor d, int attr, int type, int64_t n, const void* data) {
  const auto* b = static_cast<const uint8_t*>(data);
  static_cast<FakeDesc*>(d)->attrs[attr] = {type, std::vector<uint8_t>(b, b + n * static_cast<int64_t>(element_size(type)))};
  return STATUS_SUCCESS;
}
cudnnStatus_t fake_get(BackendDescriptor d, int attr, int, int64_t requested, int64_t* count, void* out) {
  auto* f = static_cast<FakeDesc*>(d);
  auto** descs = static_cast<FakeDesc**>(out);
  switch (static_cast<Attr>(attr)) {
    case Attr::ENGINEHEUR_RESULTS: {
      const auto& cfgs = g_fake->heuristics[f->enum_value(Attr::ENGINEHEUR_MODE)];
      *count = std::min<int64_t>(static_cast<int64_t>(cfgs.size()), requested ? requested : INT64_MAX);
      for (int64_t i = 0; out && i < *count; ++i) {
        descs[i]->engine = cfgs[static_cast<size_t>(i)].first;
        descs[i]->knobs = cfgs[static_cast<size_t>(i)].second;
      }
      return STATUS_SUCCESS;
    }
    case Attr::ENGINECFG_ENGINE: descs[0]->engine = f->engine; *count = 1; return STATUS_SUCCESS;
    case Attr::ENGINECFG_KNOB_CHOICES:
      *count = static_cast<int64_t>(f->knobs.size());
      for (size_t i = 0; i < f->knobs.size(); ++i) {
        descs[i]->knob_type = f->knobs[i].first;
        descs[i]->knob_value = f->knobs[i].second;
      }
      return STATUS_SUCCESS;
    case Attr::ENGINE_GLOBAL_INDEX: *static_cast<int64_t*>(out) = f->engine; *count = 1; return STATUS_SUCCESS;
    case Attr::KNOB_CHOICE_KNOB_TYPE: *static_cast<int*>(out) = f->knob_type; *count = 1; return STATUS_SUCCESS;
    case Attr::KNOB_CHOICE_KNOB_VALUE: *static_cast<int64_t*>(out) = f->knob_value; *count = 1; return STATUS_SUCCESS;
    case Attr::ENGINE_BEHAVIOR_NOTE:  // engine 7 compiles at run time
      *count = f->engine == 7 ? 1 : 0;
      if (f->engine == 7) *static_cast<int*>(out) = static_cast<int>(BehaviorNote::RUNTIME_COMPILATION);
      return STATUS_SUCCESS;
    case Attr::ENGINE_NUMERICAL_NOTE: *count = 0; return STATUS_SUCCESS;
    case Attr::EXECUTION_PLAN_WORKSPACE_SIZE: *static_cast<int64_t*>(out) = 4096; *count = 1; return STATUS_SUCCESS;
    default: return 2000;
  }
}
const char* fake_error_string(cudnnStatus_t s) { return s == 3002 ? "CUDNN_STATUS_NOT_SUPPORTED_SHAPE" : "FAKE"; }
void fake_last_error(char* msg, size_t n) { std::snprintf(msg, n, "%s", "the fake backend rejects this on purpose"); }

CudnnApi fake_api() {
  CudnnApi a{};
  a.cudnnGetErrorString = fake_error_string;
  a.cudnnGetLastErrorString = fake_last_error;
  a.cudnnBackendCreateDescriptor = fake_create;
  a.cudnnBackendDestroyDescriptor = fake_destroy;
  a.cudnnBackendFinalize = fake_finalize;
  a.cudnnBackendSetAttribute = fake_set;
  a.cudnnBackendGetAttribute = fake_get;
  return a;
}

class FakeBackend : public ::testing::Test {
 protected:
  void SetUp() override { g_fake = &fake_; }
  void TearDown() override { g_fake = nullptr; }
  Fake fake_;
  CudnnApi api_ = fake_api();
};

using test_partitions::Parts;
using test_partitions::partition_on_cpu;

const TensorPlan& plan_named(const Partition& p, const std::vector<TensorPlan>& plans, const std::string& name) {
  for (const auto& t : plans)
    if (p.tensor(t.id).name == name) return t;
  static TensorPlan none;
  ADD_FAILURE() << "no tensor named " << name;
  return none;
}

// ---------------------------------------------------------------- the library search

using test_env::ScopedEnv;

vendor::LibrarySpec missing_spec() {
  return {"cuDNN-test", "DNNGRAPH_TEST_VENDOR_PATH", {"libdnngraph_no_such_library.so.9"}, "libdgvendortest.so",
          {"nvidia/dgvendortest/lib"}, {"/nonexistent/dnngraph/lib64"}};
}

TEST(VendorLibrary, EveryPathTriedIsLoggedAndNamedInTheMessage) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dg_vendor_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "libdgvendortest.so.9") << "not an ELF file";
  ScopedEnv env("DNNGRAPH_TEST_VENDOR_PATH", dir.string());
  const auto lib = vendor::load_library(missing_spec(), nullptr);
  EXPECT_EQ(lib.handle, nullptr);
  ASSERT_GE(lib.searched.size(), 3u);
  const std::string msg = vendor::not_found_message(missing_spec(), lib);
  EXPECT_EQ(msg.rfind("cuDNN-test not found (searched: ", 0), 0u) << msg;
  EXPECT_NE(msg.find((dir / "libdgvendortest.so.9").string() + " (DNNGRAPH_TEST_VENDOR_PATH)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libdnngraph_no_such_library.so.9 (system loader)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("python wheels: no nvidia/dgvendortest/lib"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/nonexistent/dnngraph/lib64: no libdgvendortest.so*"), std::string::npos) << msg;
  fs::remove_all(dir);
}

TEST(VendorLibrary, ALibraryTheAcceptCheckRefusesIsSkippedWithItsReason) {
  vendor::LibrarySpec spec = missing_spec();
  spec.sonames = {"libm.so.6"};  // loads everywhere; refused as "too old" below
  const auto lib = vendor::load_library(spec, [](void*) { return std::string("it is too old (test)"); });
  EXPECT_EQ(lib.handle, nullptr);
  const std::string msg = vendor::not_found_message(spec, lib);
  EXPECT_NE(msg.find("libm.so.6 (system loader): loaded, but it is too old (test)"), std::string::npos) << msg;
}

// A library the process already holds (PyTorch's cuDNN, here libm) is taken before the system
// loader's search, so a process never holds two copies of a vendor library.
TEST(VendorLibrary, ACopyAlreadyLoadedInTheProcessIsReused) {
  vendor::LibrarySpec spec = missing_spec();
  spec.file_prefix = "libm.so";  // the test binary links libm
  const auto lib = vendor::load_library(spec, [&](void*) { return std::string(); });
  ASSERT_NE(lib.handle, nullptr) << vendor::not_found_message(spec, lib);
  EXPECT_NE(lib.path.find("libm.so"), std::string::npos) << lib.path;
  ASSERT_FALSE(lib.searched.empty());
  EXPECT_NE(lib.searched.back().find("(already loaded in this process): loaded"), std::string::npos) << lib.searched.back();
  for (const auto& line : lib.searched) EXPECT_EQ(line.find("(system loader)"), std::string::npos) << line;
}

TEST(VendorLibrary, AMissingEntryPointIsNamed) {
  CudnnApi a{};
  std::string missing;
  auto lookup = [](void*, const char* name) -> void* {
    return std::string(name) == "cudnnBackendExecute" ? nullptr : reinterpret_cast<void*>(&fake_destroy);
  };
  EXPECT_FALSE(resolve_api(lookup, nullptr, a, missing));
  EXPECT_EQ(missing, "cudnnBackendExecute");
}

TEST(VendorLibrary, InfoSaysWhatWasFoundOrEverythingSearched) {
  const std::string info = describe_vendor_libraries();
  EXPECT_NE(info.find("cuDNN:\n"), std::string::npos) << info;
  EXPECT_NE(info.find("cuBLASLt:\n"), std::string::npos) << info;
  if (api()) {
    EXPECT_GE(library_report().version, 90000u);
    EXPECT_NE(info.find("using " + library_report().path + " (cuDNN 9."), std::string::npos) << info;
  } else {
    EXPECT_NE(error().find("cuDNN not found (searched: "), std::string::npos) << error();
    EXPECT_NE(info.find("not usable: cuDNN not found"), std::string::npos) << info;
  }
}

// ---------------------------------------------------------------- lowering (fake and real backends)

TEST_F(FakeBackend, ConvBiasReluLowersToTensorsConvAndPointwiseOps) {
  Parts ps;
  partition_on_cpu(conv_bias_relu({2, 8, 6, 7}, 16, {1, 2}, {1, 2}, {2, 1}, T::BFLOAT16), ps);
  ASSERT_EQ(ps.parts.size(), 1u);
  const Partition& p = ps.parts[0];
  Lowered low;
  ASSERT_TRUE(lower_partition(api_, p, low).ok());
  // X, W, conv out, B, bias out, relu out: the two intermediates are virtual, in FLOAT.
  ASSERT_EQ(low.tensors.size(), 6u);
  const auto& x = plan_named(p, low.tensors, "X");
  EXPECT_EQ(x.dims, (std::vector<int64_t>{2, 8, 6, 7}));
  EXPECT_EQ(x.strides, channels_last({2, 8, 6, 7}));
  EXPECT_EQ(x.dtype, Dtype::BFLOAT16);
  EXPECT_FALSE(x.is_virtual);
  EXPECT_EQ(x.uid, x.id + 1);
  int virtuals = 0;
  for (const auto& t : low.tensors) virtuals += t.is_virtual;
  EXPECT_EQ(virtuals, 2);
  EXPECT_EQ(low.pack.ids.size(), 4u);  // X, W, B, the output
  const auto convs = fake_.of(Desc::CONVOLUTION);
  ASSERT_EQ(convs.size(), 1u);
  EXPECT_EQ(convs[0]->i64s(Attr::CONVOLUTION_PRE_PADDINGS), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(convs[0]->i64s(Attr::CONVOLUTION_FILTER_STRIDES), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(convs[0]->i64s(Attr::CONVOLUTION_DILATIONS), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(convs[0]->enum_value(Attr::CONVOLUTION_CONV_MODE), static_cast<int>(ConvMode::CROSS_CORRELATION));
  const auto pws = fake_.of(Desc::POINTWISE);
  ASSERT_EQ(pws.size(), 2u);
  EXPECT_EQ(pws[0]->enum_value(Attr::POINTWISE_MODE), static_cast<int>(PwMode::ADD));
  EXPECT_EQ(pws[1]->enum_value(Attr::POINTWISE_MODE), static_cast<int>(PwMode::RELU_FWD));
  EXPECT_EQ(low.ops.size(), 3u);
  for (const auto& d : fake_.all) EXPECT_TRUE(d->finalized) << "descriptor type " << d->type;
}

TEST_F(FakeBackend, OneDimensionalConvGetsAUnitHeight) {
  Parts ps;
  partition_on_cpu(conv_bias_relu({2, 8, 11}, 16, {1}, {2}, {1}, T::FLOAT), ps);
  Lowered low;
  ASSERT_TRUE(lower_partition(api_, ps.parts[0], low).ok());
  const auto& x = plan_named(ps.parts[0], low.tensors, "X");
  EXPECT_EQ(x.dims, (std::vector<int64_t>{2, 8, 1, 11}));
  EXPECT_EQ(x.strides, (std::vector<int64_t>{88, 1, 88, 8}));
  const auto conv = fake_.of(Desc::CONVOLUTION).at(0);
  EXPECT_EQ(conv->i64s(Attr::CONVOLUTION_PRE_PADDINGS), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(conv->i64s(Attr::CONVOLUTION_FILTER_STRIDES), (std::vector<int64_t>{1, 2}));
  for (const auto& t : low.tensors) EXPECT_EQ(t.dims.size(), 4u);
}

TEST_F(FakeBackend, MatmulScalarsAreByValueAndRankTwoGetsABatchDim) {
  Parts ps;
  partition_on_cpu([](dg::Graph& g) {
    auto a = ct::input(g, "A", {5, 7}, T::FLOAT);
    auto b = ct::input(g, "B", {7, 3}, T::FLOAT);
    auto c = g.scale(g.matmul(a, b, dg::MatmulAttr()), g.tensor(0.5));
    c->set_output(true);
  }, ps);
  Lowered low;
  ASSERT_TRUE(lower_partition(api_, ps.parts[0], low).ok());
  const auto& a = plan_named(ps.parts[0], low.tensors, "A");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{1, 5, 7}));
  EXPECT_EQ(a.strides, (std::vector<int64_t>{35, 7, 1}));
  int by_value = 0;
  for (const auto& t : low.tensors)
    if (t.by_value) {
      ++by_value;
      EXPECT_EQ(t.dims, (std::vector<int64_t>{1, 1, 1}));
    }
  EXPECT_EQ(by_value, 1);
  EXPECT_EQ(fake_.of(Desc::OPERATION_MATMUL).size(), 1u);
}

TEST_F(FakeBackend, AFinalizeFailureCarriesCudnnsOwnWords) {
  fake_.fail_type = static_cast<int>(Desc::OPERATION_CONVOLUTION_FORWARD);
  fake_.fail_status = 3002;
  Parts ps;
  partition_on_cpu(conv_bias_relu({1, 8, 5, 5}, 8, {1, 1}, {1, 1}, {1, 1}, T::FLOAT), ps);
  Lowered low;
  const Status s = lower_partition(api_, ps.parts[0], low);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::GRAPH_NOT_SUPPORTED);
  for (const char* part : {"CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR", "CUDNN_STATUS_NOT_SUPPORTED_SHAPE",
                           "the fake backend rejects this on purpose", "(conv_fprop)"})
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
}

TEST_F(FakeBackend, HeuristicConfigsBecomeKnobsWithoutDuplicates) {
  const int tile = static_cast<int>(KnobType::TILE_SIZE), stages = static_cast<int>(KnobType::STAGES);
  fake_.heuristics[static_cast<int>(HeurMode::A)] = {{12, {{tile, 3}, {stages, 4}}}, {7, {}}};
  fake_.heuristics[static_cast<int>(HeurMode::FALLBACK)] = {{7, {}}, {0, {{tile, 1}}}};
  Descriptor graph(api_, Desc::OPERATIONGRAPH);
  ASSERT_TRUE(graph.finalize().ok());
  std::vector<EngineConfig> configs;
  ASSERT_TRUE(heuristic_configs(api_, graph, HeurMode::A, configs).ok());
  ASSERT_TRUE(heuristic_configs(api_, graph, HeurMode::FALLBACK, configs).ok());
  ASSERT_EQ(configs.size(), 3u);
  EXPECT_EQ(configs[0].engine, 12);
  EXPECT_TRUE(configs[1].runtime_compiled);
  const Knobs k = to_knobs(configs[0]);
  EXPECT_EQ(knobs_to_string(k), "cudnn_engine=12,k_stages=4,k_tile_size=3");
  EngineConfig back;
  std::string why;
  ASSERT_TRUE(from_knobs(k, back, why)) << why;
  EXPECT_EQ(back.engine, 12);
  EXPECT_EQ(back.knobs, configs[0].knobs);
  EXPECT_FALSE(from_knobs({{"cudnn_engine", 1}, {"k_no_such_knob", 2}}, back, why));
  EXPECT_NE(why.find("k_no_such_knob"), std::string::npos);
  EXPECT_FALSE(from_knobs({{"tile", 1}}, back, why));
}

TEST_F(FakeBackend, APlanIsMadeFromTheEngineIndexAndKnobChoices) {
  Descriptor graph(api_, Desc::OPERATIONGRAPH);
  ASSERT_TRUE(graph.finalize().ok());
  EngineConfig c;
  c.engine = 5;
  c.knobs = {{static_cast<int>(KnobType::SPLIT_K_SLC), 2}, {static_cast<int>(KnobType::TILE_SIZE), 9}};
  PlanDescriptors pd;
  auto fake_handle = reinterpret_cast<cudnnHandle_t>(uintptr_t{0x1234});
  ASSERT_TRUE(make_plan(api_, fake_handle, graph, c, nullptr, pd).ok());
  EXPECT_EQ(pd.workspace, 4096);
  const auto engines = fake_.of(Desc::ENGINE);
  ASSERT_EQ(engines.size(), 1u);
  EXPECT_EQ(engines[0]->i64s(Attr::ENGINE_GLOBAL_INDEX), (std::vector<int64_t>{5}));
  const auto choices = fake_.of(Desc::KNOB_CHOICE);
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[1]->enum_value(Attr::KNOB_CHOICE_KNOB_TYPE), static_cast<int>(KnobType::TILE_SIZE));
  EXPECT_EQ(choices[1]->i64s(Attr::KNOB_CHOICE_KNOB_VALUE), (std::vector<int64_t>{9}));
  const auto plans = fake_.of(Desc::EXECUTION_PLAN);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0]->desc(Attr::EXECUTION_PLAN_HANDLE), fake_handle);
  EXPECT_FALSE(plans[0]->has(Attr::EXECUTION_PLAN_KERNEL_CACHE));
}

std::string reason_for(const ct::Builder& build) {
  Parts ps;
  partition_on_cpu(build, ps);
  return ps.parts.empty() ? "no partition" : unsupported_reason(ps.parts[0]);
}

ct::Builder one_matmul(T t, bool amax) {
  return [=](dg::Graph& g) {
    auto a = ct::input(g, "A", {1, 8, 8}, t);
    auto b = ct::input(g, "B", {1, 8, 8}, t);
    auto c = g.matmul(a, b, dg::MatmulAttr().set_name("mm"));
    c->set_output(true).set_data_type(t);
    if (amax) g.reduction(c, dg::ReductionAttr().set_mode(ReductionMode::AMAX))->set_dim({1, 1, 1}).set_output(true)
                  .set_data_type(T::FLOAT);
  };
}

TEST(CudnnLowering, WhatIsNotOfferedHasAReason) {
  EXPECT_EQ(reason_for(conv_bias_relu({1, 8, 5, 5}, 8, {1, 1}, {1, 1}, {1, 1}, T::BFLOAT16)), "");
  EXPECT_EQ(reason_for(matmul_epilogue(2, 16, 16, 16, T::HALF)), "");
  EXPECT_NE(reason_for([](dg::Graph& g) {
              auto x = ct::input(g, "X", {4, 16}, T::FLOAT);
              auto ln = g.layernorm(x, ct::input(g, "scale", {1, 16}, T::FLOAT), ct::input(g, "bias", {1, 16}, T::FLOAT),
                                    dg::LayernormAttr().set_name("ln").set_epsilon(1e-5));
              ln[0]->set_output(true);
            }).find("node 'ln' (layernorm)"),
            std::string::npos);
  EXPECT_NE(reason_for([](dg::Graph& g) {
              g.relu(ct::input(g, "X", {4, 16}, T::HALF))->set_output(true);
            }).find("no conv or matmul"),
            std::string::npos);
  EXPECT_NE(reason_for(one_matmul(T::FLOAT, false)).find("a FLOAT matmul"), std::string::npos);
  EXPECT_NE(reason_for(one_matmul(T::INT64, false)).find("input type INT64"), std::string::npos);
  EXPECT_NE(reason_for(one_matmul(T::BFLOAT16, true)).find("(reduction): lowered, but not yet checked"),
            std::string::npos);
}

TEST(CudnnLowering, TheRealLibrarysOwnWordsReachTheStatus) {
  if (!api()) GTEST_SKIP() << error();
  Descriptor t(*api(), Desc::TENSOR);  // finalized without dims: cuDNN refuses it
  const Status s = t.finalize();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cudnnBackendFinalize(CUDNN_BACKEND_TENSOR_DESCRIPTOR): CUDNN_STATUS_"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find(" ("), std::string::npos) << "no last-error text: " << s.message();
}

TEST(CudnnLowering, TheRealLibraryFinalizesTheDescriptors) {
  if (!api()) GTEST_SKIP() << error();
  Parts ps;
  partition_on_cpu(conv_bias_relu({2, 16, 9, 9}, 32, {1, 1}, {1, 1}, {1, 1}, T::HALF), ps);
  Lowered low;
  const Status s = lower_partition(*api(), ps.parts[0], low);
  EXPECT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(low.ops.size(), 3u);
}

// check_knobs needs no cuDNN: an engine index and knobs of cuDNN's knob types.
TEST(CudnnEngine, CheckKnobsWantsAnEngineIndexAndCudnnKnobTypes) {
  const Knobs good{{kEngineKnob, 3}, {"k_" + knob_type_name(0), 2}};
  EXPECT_TRUE(engine().check_knobs(good).ok()) << engine().check_knobs(good).to_string();
  auto expect_error = [](const Knobs& k, const std::string& part) {
    const Status s = engine().check_knobs(k);
    EXPECT_EQ(s.code(), ErrorCode::INVALID_VALUE) << knobs_to_string(k);
    EXPECT_NE(s.message().find(part), std::string::npos) << s.message();
  };
  expect_error({{"k_" + knob_type_name(0), 2}}, "the knobs name no cuDNN engine ('cudnn_engine')");
  expect_error({{kEngineKnob, 3}, {"tile_m", 128}}, "knob 'tile_m' is no cuDNN knob");
  expect_error({{kEngineKnob, -2}}, "engine index -2 is negative");
}

TEST(CudnnEngine, ACpuHandleIsRefusedInExplain) {
  dg::Graph g;
  conv_bias_relu({1, 8, 5, 5}, 8, {1, 1}, {1, 1}, {1, 1}, T::FLOAT)(g);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  const std::string text = g.explain();
  EXPECT_NE(text.find("cudnn: rejected: runs on CUDA handles"), std::string::npos) << text;
  EXPECT_NE(text.find("cublaslt: rejected:"), std::string::npos) << text;
  EXPECT_EQ(engine_id_by_name("cudnn"), 13);
  EXPECT_EQ(engine_id_by_name("cublaslt"), 14);
}

// ---------------------------------------------------------------- a plan's CUDA graphs by pointer set

PointerSet pointer_set(uint64_t i) { return {0x10000 * i, 0x20000 * i + 0x100, 0x900000}; }

// What each call of a sequence of pointer sets does: replays its graph ('r'), makes one ('m') or
// runs cudnnBackendExecute ('e').
std::string trace(GraphCache& c, const std::vector<uint64_t>& sets) {
  std::string out;
  for (uint64_t i : sets) {
    const PointerSet key = pointer_set(i);
    if (c.find(key)) {
      out += 'r';
    } else if (c.admit(key)) {
      c.slot_for(key);
      out += 'm';
    } else {
      out += 'e';
    }
  }
  return out;
}

std::vector<uint64_t> cycles(uint64_t first, uint64_t sets, int times) {
  std::vector<uint64_t> out;
  for (int t = 0; t < times; ++t)
    for (uint64_t i = 0; i < sets; ++i) out.push_back(first + i);
  return out;
}

TEST(CudnnGraphCache, ASetGetsAGraphOnItsSecondSightingAndKeepsIt) {
  GraphCache c;
  EXPECT_EQ(trace(c, {1, 1, 1}), "emr");
  EXPECT_EQ(trace(c, cycles(2, 2, 3)), "eemmrr");              // ping-pong buffers
  EXPECT_EQ(trace(c, cycles(4, 4, 3)), "eeeemmmmrrrr");        // four sets
  EXPECT_EQ(trace(c, {1, 2, 3, 4, 5, 6, 7}), "rrrrrrr");       // all seven still held
  EXPECT_EQ(c.size(), 7u);
}

TEST(CudnnGraphCache, PointersThatNeverRepeatNeverGetAGraph) {
  GraphCache c;
  EXPECT_EQ(trace(c, cycles(1, 200, 1)), std::string(200, 'e'));
  EXPECT_EQ(c.size(), 0u);
}

TEST(CudnnGraphCache, AWorkingSetLargerThanTheCacheKeepsItsGraphsInsteadOfChurning) {
  GraphCache c;
  const uint64_t n = GraphCache::kCapacity + 2;
  const std::string t = trace(c, cycles(1, n, 10));
  EXPECT_EQ(t.substr(0, 2 * n), std::string(n, 'e') + std::string(GraphCache::kCapacity, 'm') + "ee") << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), 'm'), static_cast<long>(GraphCache::kCapacity)) << t;
  EXPECT_EQ(t.substr(t.size() - n), std::string(GraphCache::kCapacity, 'r') + "ee") << t;
  EXPECT_EQ(c.size(), GraphCache::kCapacity);
}

TEST(CudnnGraphCache, AnIdleGraphMakesRoomForANewSet) {
  GraphCache c;
  trace(c, cycles(1, GraphCache::kCapacity, 2));
  ASSERT_EQ(c.size(), GraphCache::kCapacity);
  const std::string t = trace(c, std::vector<uint64_t>(GraphCache::kIdleCalls + 4, 100));
  // Executes until the least recently used graph (set 1) has sat idle kIdleCalls calls, then
  // takes its place and replays.
  const size_t m = t.find('m');
  ASSERT_NE(m, std::string::npos) << t;
  EXPECT_EQ(t.substr(0, m), std::string(m, 'e')) << t;
  EXPECT_EQ(t.substr(m + 1), std::string(t.size() - m - 1, 'r')) << t;
  EXPECT_EQ(trace(c, {1, 1}), "em") << "set 1's graph made room, set 2's is idle for long enough";
  EXPECT_EQ(c.size(), GraphCache::kCapacity);
}

}  // namespace
}  // namespace dnngraph::cudnn
