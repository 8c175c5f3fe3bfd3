// What the TMA core tests share (test_cuda_conv_tma.cpp, test_cuda_conv_halo.cpp): the conv ->
// bias -> ReLU graph of a case, its anchor partition, and every knob setting against ref on a GPU.
#pragma once
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_conv_test_util.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "runtime/handle_impl.hpp"
#include "runtime/memory.hpp"
#include "test_cuda_util.hpp"

namespace cuda_conv_test {

inline constexpr dg::DataType BF = dg::DataType::BFLOAT16;

// X (dims xd, strides xs) -> conv (case geometry) -> + bias -> ReLU, bf16 (or t), as a graph.
inline void add_conv(dg::Graph& g, const Case& c, const Dims& xs, dg::DataType t = BF) {
  set_types(g, t);
  g.set_allow_tf32(true);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim(c.x).set_stride(xs).set_data_type(t));
  auto y = g.conv_fprop(x, declare(g, "W", filter_dims(c), t), geometry<dg::ConvFpropAttr>(c).set_name("conv"));
  Dims bd(c.x.size(), 1);
  bd[1] = c.k;
  y = g.pointwise(g.bias(y, declare(g, "B", bd, t)), dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride(channels_last(out_dims(c)));
}


// The case's graph (channels-last X) and its anchor partition, for knob spaces and sources.
struct Built {
  dg::Graph g;
  std::vector<dg::Partition> parts;
  const dg::Partition& p() const { return parts.at(0); }
};
inline std::unique_ptr<Built> partition_of(const Case& c, dg::DataType t = BF) {
  auto b = std::make_unique<Built>();
  add_conv(b->g, c, channels_last(c.x), t);
  EXPECT_TRUE(anchored_partitions(b->g, b->parts));
  return b;
}

// The case (conv -> + bias [-> + R] -> ReLU, X with strides `xs`, output type `out`) on ref, then
// on the engine with each of `settings` (plans built straight from the knobs, whatever their rank),
// outputs poisoned with NaN before each run.
// `exact_fp32`: FLOAT inputs in a graph that does not allow TF32.
// `bias_offset`: the bias (input 2) starts that many bytes into its buffer, so that 4 = off the
// 16-byte vectors (the epilogues' element-by-element paths).
inline void run_knobs_vs_ref(dg::Handle& gpu, const Case& c, dg::DataType t, dg::DataType out, bool residual, const Dims& xs,
                      const std::vector<dg::Knobs>& settings, std::mt19937& rng, size_t bias_offset = 0,
                      M activation = M::RELU_FWD, bool exact_fp32 = false) {
  Dims bd(c.x.size(), 1);
  bd[1] = c.k;
  std::vector<HostTensor> in{ref_test::make_tensor(c.x, xs, t), nhwc(filter_dims(c), t), nhwc(bd, dg::DataType::FLOAT)};
  if (residual) in.push_back(nhwc(out_dims(c), dg::DataType::FLOAT));
  for (auto& h : in) gemm_test::fill_random(h, rng);
  const std::vector<HostTensor> outs{nhwc(out_dims(c), out)};
  // FLOAT inputs: TF32 allowed (and its tolerance), or kept exact (3xTF32 plans, held to fp32's).
  const bool tf32 = t == dg::DataType::FLOAT && !exact_fp32;
  const auto build = [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
    set_fp32_compute(g);
    g.set_allow_tf32(tf32);
    auto y = g.bias(g.conv_fprop(ts[0], ts[1], geometry<dg::ConvFpropAttr>(c)), ts[2]);
    if (residual) y = g.add(y, ts[3]);
    return std::vector<dg::TensorPtr>{g.pointwise(y, dg::PointwiseAttr().set_mode(activation))};
  };
  std::vector<HostTensor> want, got;
  ASSERT_TRUE(ref_test::run_build_on_ref(in, outs, build, want).ok());
  dg::Graph g;
  dg::VariantPack unused;
  ref_test::declare_graph(g, in, outs, build, got, unused);
  gemm_test::Lowered low;
  ASSERT_TRUE(gemm_test::lower_graph(g, low));
  ASSERT_EQ(low.parts.size(), 1u);
  const dg::Partition& p = low.parts[0];
  dg::HandleImpl& h = impl_of(gpu);
  // Device buffers by IR tensor id: the inputs by their declared names (in0, in1, ...), the output.
  std::vector<void*> ptrs(low.ir->tensors.size(), nullptr);
  std::vector<dg::memory::Buffer> bufs;
  bufs.reserve(p.inputs.size() + 1);
  for (int id : p.inputs) {
    const size_t index = std::stoul(p.tensor(id).name.substr(2)), offset = index == 2 ? bias_offset : 0;
    const HostTensor& src = in.at(index);
    bufs.emplace_back(h, src.bytes.size() + offset);
    char* dst = static_cast<char*>(bufs.back().get()) + offset;
    ASSERT_TRUE(dg::memory::copy_to_device(h, dst, src.bytes.data(), src.bytes.size()).ok());
    ptrs[static_cast<size_t>(id)] = dst;
  }
  ASSERT_EQ(p.outputs.size(), 1u);
  bufs.emplace_back(h, got[0].bytes.size());
  dg::memory::Buffer& y = bufs.back();
  ptrs[static_cast<size_t>(p.outputs[0])] = y.get();
  dg::Target target;
  target.handle = &h;
  target.dynamic_shapes = true;
  int64_t taps = c.x[1];
  for (int64_t f : c.filt) taps *= f;
  const double tol = out == dg::DataType::FLOAT ? (tf32 ? kTf32TruncTol : 2e-5) : 1.2e-2;
  for (const dg::Knobs& k : settings) {
    SCOPED_TRACE(dg::knobs_to_string(k));
    std::unique_ptr<dg::Plan> plan;
    const dg::Status s = dg::cuda::conv_implicit_gemm_engine().build(p, target, k, plan);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const HostTensor poison = outs[0];  // NaN in every slot
    ASSERT_TRUE(dg::memory::copy_to_device(h, y.get(), poison.bytes.data(), poison.bytes.size()).ok());
    dg::memory::Buffer ws(h, static_cast<size_t>(plan->workspace_size()) + 256);
    ASSERT_TRUE(plan->execute({h, ptrs, ws.get()}).ok());
    ASSERT_TRUE(dg::memory::synchronize(h).ok());
    ASSERT_TRUE(dg::memory::copy_to_host(h, got[0].bytes.data(), y.get(), got[0].bytes.size()).ok());
    ref_test::expect_near(got[0], [&](const Dims& ix) { return want[0].get(ix); }, tol,
                          std::sqrt(double(taps)) * (tf32 ? 1.0 : 0.1));
  }
}

}  // namespace cuda_conv_test
