// The ahead-of-time kernels embedded in the library (planning/aot_kernels.hpp, made at build time
// by tools/aot for a described H200) are found for the kernels the tutorial graphs' builds ask
// for, are keyed so that any drift misses, and are served by the kernel cache before compiling.
// CPU-only: keys are compared, no cubin is loaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/aot_kernels.hpp"
#include "planning/aot_plan.hpp"
#include "planning/described_target.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dg = dnngraph;

namespace {

class AotKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dg::cuda::nvrtc()) GTEST_SKIP() << "the CUDA engines need NVRTC to accept a partition: " << dg::cuda::nvrtc_error();
    if (const char* off = std::getenv("DNNGRAPH_AOT_KERNELS"); off && std::string(off) == "0")
      GTEST_SKIP() << "DNNGRAPH_AOT_KERNELS=0 turns the embedded kernels off";
    if (dg::kAotKernelCount == 0) GTEST_SKIP() << "the library has no AOT kernels: " << dg::kAotDescription;
  }

  // The keys that building each own CUDA engine's first candidate of `file` (`all`: every own
  // candidate, through the planner's builds) asks for. `batch` > 0 replaces the leading dim
  // `file_batch` of the tensors that start with it (the tutorial matmul's 16).
  std::vector<dg::KernelKey> keys_of(const std::string& file, bool dynamic, int batch = 0, int file_batch = 16,
                                     bool all = false) {
    std::ifstream f(std::string(DNNGRAPH_EXAMPLE_GRAPHS) + "/" + file);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string json = ss.str();
    const std::string from = "\"dim\": [" + std::to_string(file_batch) + ", ";
    for (size_t at; batch > 0 && (at = json.find(from)) != std::string::npos;)
      json.replace(at, from.size(), "\"dim\": [" + std::to_string(batch) + ", ");
    dg::Graph g;
    dg::Handle cpu(dg::Device::cpu());
    EXPECT_TRUE(dg::Graph::from_json(json, g).ok()) << file;
    g.set_dynamic_shape_enabled(dynamic);
    EXPECT_TRUE(g.validate().ok());
    EXPECT_TRUE(g.build_operation_graph(cpu).ok());
    auto h200 = dg::describe_handle();
    dg::KernelCacheImpl cache;
    std::vector<dg::KernelKey> keys;
    cache.record_keys(&keys, false);
    dg::Target t;
    t.handle = h200.get();
    t.dynamic_shapes = dynamic;
    t.kernel_cache = &cache;
    std::vector<std::string> labels;
    int failed = 0;
    const auto build = all ? dg::build_all_own_candidates : dg::build_first_own_candidates;
    EXPECT_TRUE(build(dg::impl_of(g), t, labels, failed).ok());
    EXPECT_EQ(keys.size(), labels.size()) << file << ": one kernel per own-engine candidate";
    return keys;
  }
};

}  // namespace

TEST_F(AotKernels, TheTutorialGraphsKernelsAreEmbedded) {
  struct Case {
    std::string file;
    bool dynamic;
    int batch;
  };
  // The tour's graphs: its dynamic-shape step runs the matmul at batches 4, 8 and 16.
  for (const auto& [file, dynamic, batch] : std::vector<Case>{{"tutorial_conv_bias_relu.json", false, 0},
                                                              {"tutorial_matmul_epilogue_amax.json", false, 0},
                                                              {"tutorial_matmul_epilogue_amax.json", true, 0},
                                                              {"tutorial_matmul_epilogue_amax.json", true, 4},
                                                              {"tutorial_matmul_epilogue_amax.json", true, 8},
                                                              {"tutorial_sdpa_causal.json", false, 0},
                                                              {"convnet_block.json", false, 0},
                                                              {"tutorial_conv_bias_relu_small.json", false, 0}}) {
    const auto keys = keys_of(file, dynamic, batch);
    EXPECT_FALSE(keys.empty()) << file;
    for (const auto& k : keys) {
      const dg::AotKernel* a = dg::aot_find(k);
      EXPECT_NE(a, nullptr) << file << (dynamic ? " (dynamic)" : "") << " batch " << batch
                            << ": no embedded kernel for " << k.portable_text();
      if (a) {
        EXPECT_GT(a->size, 1000u);
      }
    }
  }
}

TEST_F(AotKernels, AnyDriftInTheKeyMisses) {
  auto keys = keys_of("tutorial_conv_bias_relu.json", false);
  ASSERT_FALSE(keys.empty());
  dg::KernelKey k = keys.front();
  ASSERT_NE(dg::aot_find(k), nullptr);
  k.compiler_version = "nvrtc 99.9";  // another NVRTC: the cubin runs the same
  EXPECT_NE(dg::aot_find(k), nullptr);
  for (auto change : std::vector<std::function<void(dg::KernelKey&)>>{
           [](dg::KernelKey& x) { x.source_hash ^= 1; }, [](dg::KernelKey& x) { x.options += "-G "; },
           [](dg::KernelKey& x) { x.arch = "sm_100"; }}) {
    dg::KernelKey drifted = keys.front();
    change(drifted);
    EXPECT_EQ(dg::aot_find(drifted), nullptr) << drifted.portable_text();
  }
}

TEST_F(AotKernels, TheCacheServesThemWithoutCompiling) {
  const auto keys = keys_of("tutorial_matmul_epilogue_amax.json", false);
  ASSERT_FALSE(keys.empty());
  const dg::AotKernel* a = dg::aot_find(keys.front());
  ASSERT_NE(a, nullptr);
  dg::KernelCacheImpl cache;
  std::vector<uint8_t> bin;
  auto never = [](std::vector<uint8_t>&) {
    ADD_FAILURE() << "compiled a kernel the library has";
    return dg::Status{dg::ErrorCode::COMPILATION_FAILED, "not expected"};
  };
  ASSERT_TRUE(cache.get_or_compile(keys.front(), never, bin).ok());
  EXPECT_EQ(bin, std::vector<uint8_t>(a->data, a->data + a->size));
  EXPECT_EQ(cache.aot_hits(), 1);
  ASSERT_TRUE(cache.get_or_compile(keys.front(), never, bin).ok());
  EXPECT_EQ(cache.hits(), 1) << "then served from memory";
  EXPECT_EQ(cache.aot_hits(), 1);
}

// Shapes the library was not built for: the conv and SDPA tutorials at other batches, every own
// candidate built (build_plans(ALL)) without dynamic shapes, ask only for shipped kernels, the
// dynamic-shape form of each candidate whose own kernel is not shipped (planning/shipped_kernels.hpp).
TEST_F(AotKernels, EveryCandidateOfTheConvAndSdpaTutorialsAtOtherBatchesIsShipped) {
  struct Case {
    std::string file;
    int file_batch, batch;
  };
  for (const auto& [file, file_batch, batch] : std::vector<Case>{{"tutorial_conv_bias_relu.json", 32, 8},
                                                                 {"tutorial_conv_bias_relu.json", 32, 64},
                                                                 {"tutorial_sdpa_causal.json", 4, 2}}) {
    const auto keys = keys_of(file, false, batch, file_batch, true);
    EXPECT_GT(keys.size(), file.find("conv") != std::string::npos ? 20u : 4u) << file;
    for (const auto& k : keys)
      EXPECT_NE(dg::aot_find(k), nullptr) << file << " at batch " << batch << ": " << k.portable_text() << " is compiled";
  }
}
