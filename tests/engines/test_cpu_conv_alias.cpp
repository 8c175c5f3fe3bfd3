// An output stored over its input (Engine::output_alias, planning/intermediate_layout.cpp): a
// chain of 1x1 convs whose third adds the first one's output (a residual) runs on the CPU
// engines against ref, and that add's output takes the residual's bytes wherever the implicit
// GEMM's chain stores over it at no cost.
#include <random>

#include "cpu_test_util.hpp"
#include "planning/plan_set.hpp"

namespace {

using cpu_test::dg::DataType;
namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;

Dims channels_last(const Dims& d) { return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]}; }

// The partitions' (input, output) pairs that share workspace bytes.
int shared_pairs(const dg::PlanSet& ps) {
  int n = 0;
  for (const auto& pp : ps.parts)
    for (int out : pp.partition.outputs)
      for (int in : pp.partition.inputs) {
        const int64_t a = ps.workspace_offset[static_cast<size_t>(out)], b = ps.workspace_offset[static_cast<size_t>(in)];
        n += a >= 0 && a == b;
      }
  return n;
}

TEST(CpuConvAlias, ResidualAddStoredOverItsOperandMatchesRef) {
  std::mt19937 rng(17);
  for (int64_t c : {32, 48}) {
    for (int64_t hw : {14, 28}) {
      SCOPED_TRACE("C" + std::to_string(c) + " " + std::to_string(hw) + "x" + std::to_string(hw));
      const Dims xd{1, c, hw, hw}, wd{c, c, 1, 1};
      std::vector<HostTensor> in{ref_test::make_tensor(xd, channels_last(xd), DataType::FLOAT)};
      for (int i = 0; i < 4; ++i) in.push_back(ref_test::make_tensor(wd, channels_last(wd), DataType::FLOAT));
      for (auto& t : in) t.randomize(rng, -0.5, 0.5);
      const std::vector<HostTensor> outs{ref_test::make_tensor(xd, channels_last(xd), DataType::FLOAT)};
      const ref_test::Build build = [](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
        auto conv = [&](const dg::TensorPtr& x, const dg::TensorPtr& w) { return g.conv_fprop(x, w, dg::ConvFpropAttr()); };
        auto a = g.relu(conv(t[0], t[1]));
        auto b = g.relu(conv(a, t[2]));
        auto r = g.relu(g.add(conv(b, t[3]), a));  // a's last reader: its bytes may take r
        return std::vector<dg::TensorPtr>{conv(r, t[4])};
      };
      std::vector<HostTensor> want;
      auto s = ref_test::run_build_on_ref(in, outs, build, want);
      ASSERT_TRUE(s.ok()) << s.to_string();

      dg::Handle handle(dg::Device::cpu());
      dg::Graph g;
      std::vector<HostTensor> got;
      dg::VariantPack pack;
      ref_test::declare_graph(g, in, outs, build, got, pack);
      ASSERT_TRUE(g.validate().ok());
      ASSERT_TRUE(g.build_operation_graph(handle).ok());
      ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
      ASSERT_TRUE(g.check_support(handle).ok());
      ASSERT_TRUE(g.build_plans(handle, dg::BuildPlanPolicy::HEURISTICS_CHOICE).ok());
      const dg::PlanSet& ps = *dg::impl_of(g).plans;
      ASSERT_EQ(ps.parts.size(), 4u) << g.explain();
      // The third partition's first candidate decides (every other one is at least SAFE: ref).
      const auto& third = ps.parts[2];
      const dg::Engine* e = dg::engine_by_id(third.candidates.front().engine_id);
      const bool fast = std::any_of(third.partition.inputs.begin(), third.partition.inputs.end(), [&](int x) {
        return e->output_alias(third.partition, third.candidates.front().knobs, third.partition.outputs[0], x) ==
               dg::Engine::Alias::FAST;
      });
      EXPECT_EQ(shared_pairs(ps), fast ? 1 : 0);
      if (dg::cpu::cpu_features().supports(dg::cpu::Isa::AVX512) && c == 32) {
        EXPECT_TRUE(fast) << "AVX-512 14x32 tiles fill the 1x1 conv exactly";
      }
      int64_t ws = 0;
      ASSERT_TRUE(g.get_workspace_size(ws).ok());
      std::vector<unsigned char> workspace(static_cast<size_t>(ws));
      for (int run = 0; run < 2; ++run) {  // the second run reads the residual afresh
        s = g.execute(handle, pack, ws ? workspace.data() : nullptr);
        ASSERT_TRUE(s.ok()) << s.to_string();
        // Four fp32 convs in a row against ref's doubles: 1e-4 of the values near 0.05.
        ref_test::expect_near(got[0], [&](const Dims& ix) { return want[0].get(ix); }, 1e-4, 0.05);
      }
    }
  }
}

}  // namespace
