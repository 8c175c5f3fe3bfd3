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

  // The keys that building each own CUDA engine's first candidate of `file` asks for.
  // `batch` > 0 replaces the tutorial matmul's batch of 16 (its A and B dims start with it).
  std::vector<dg::KernelKey> keys_of(const std::string& file, bool dynamic, int batch = 0) {
    std::ifstream f(std::string(DNNGRAPH_EXAMPLE_GRAPHS) + "/" + file);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string json = ss.str();
    for (size_t at; batch > 0 && (at = json.find("\"dim\": [16, ")) != std::string::npos;)
      json.replace(at, 12, "\"dim\": [" + std::to_string(batch) + ", ");
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
    EXPECT_TRUE(dg::build_first_own_candidates(dg::impl_of(g), t, labels, failed).ok());
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
