// The fuzz input decoded into a small graph: one anchor (pointwise, matmul, conv_fprop, reduction,
// layernorm, rmsnorm or pooling) on user tensors in random stride permutations, then up to three
// pointwise ops (some with a broadcast second input) and an optional terminal reduction, the
// output in a layout of its own. Dims are at most 16 and tensors at most 4096 elements, so every
// allocation is bounded. The graph is written to JSON and taken through run_json_vs_ref: a graph
// that validates must plan, build and run on the CPU engines and agree with ref (tolerances by
// dtype), with no write into gaps, past a span or into an input. Anything else traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "bad_input/run_vs_ref.hpp"
#include "common/dims.hpp"
#include "fuzz_common.hpp"

namespace dg = dnngraph;

namespace {

using test_dims::Dims;
using test_dims::volume;

constexpr int64_t kMaxElements = 4096;

// Packed strides in an order the input picks, sometimes with a gap after one dim.
Dims permuted_strides(FuzzedDataProvider& in, const Dims& dims) {
  std::vector<size_t> order(dims.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[in.ConsumeIntegralInRange<size_t>(0, i - 1)]);
  const size_t gap_after = in.ConsumeIntegralInRange<size_t>(0, dims.size() * 2);
  Dims strides(dims.size());
  int64_t running = 1;
  for (size_t k = 0; k < order.size(); ++k) {
    strides[order[k]] = running;
    running *= dims[order[k]];
    if (k == gap_after) running += 1;
  }
  return strides;
}

Dims small_dims(FuzzedDataProvider& in, size_t rank, int64_t hi) {
  Dims d(rank);
  for (auto& v : d) v = in.ConsumeIntegralInRange<int64_t>(1, hi);
  return d;
}

class GraphDecoder {
 public:
  GraphDecoder(FuzzedDataProvider& in, dg::Graph& g) : in_(in), g_(g) {}

  // False when the input asks for more than the bounds allow.
  bool decode() {
    type_ = in_.PickValueInArray({dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16});
    g_.set_io_data_type(type_)
        .set_intermediate_data_type(dg::DataType::FLOAT)
        .set_compute_data_type(dg::DataType::FLOAT);
    dg::TensorPtr t = anchor();
    if (!t) return false;
    for (int i = in_.ConsumeIntegralInRange(0, 3); i > 0; --i) t = pointwise(t);
    if (in_.ConsumeBool()) t = g_.reduction(t, dg::ReductionAttr().set_mode(reduction_mode()));
    t->set_output(true);
    if (in_.ConsumeBool() && g_.validate().ok()) t->set_stride(permuted_strides(in_, t->get_dim()));
    return true;
  }

 private:
  // t's dims, inferred by validating the graph so far with t as its output (empty if invalid).
  Dims inferred_dims(const dg::TensorPtr& t) {
    if (!t->get_is_virtual()) return t->get_dim();
    t->set_output(true);
    const bool valid = g_.validate().ok();
    t->set_output(false);
    return valid ? t->get_dim() : Dims{};
  }

  dg::TensorPtr input(const Dims& dims) {
    if (volume(dims) > kMaxElements) return nullptr;
    return g_.tensor(dg::TensorAttr()
                         .set_name("T" + std::to_string(count_++))
                         .set_dim(dims)
                         .set_stride(permuted_strides(in_, dims))
                         .set_data_type(type_));
  }

  dg::ReductionMode reduction_mode() {
    return in_.PickValueInArray({dg::ReductionMode::ADD, dg::ReductionMode::MAX, dg::ReductionMode::MIN,
                                 dg::ReductionMode::AMAX, dg::ReductionMode::AVG, dg::ReductionMode::NORM1});
  }

  dg::TensorPtr anchor() {
    switch (in_.ConsumeIntegralInRange(0, 6)) {
      case 0:
        return input(small_dims(in_, in_.ConsumeIntegralInRange<size_t>(1, 4), 8));
      case 1:
        return matmul();
      case 2:
        return conv();
      case 3: {
        auto x = input(small_dims(in_, in_.ConsumeIntegralInRange<size_t>(2, 4), 8));
        return x ? g_.reduction(x, dg::ReductionAttr().set_mode(reduction_mode())) : nullptr;
      }
      case 4:
      case 5:
        return norm();
      default:
        return pool();
    }
  }

  dg::TensorPtr matmul() {
    const int64_t b = in_.ConsumeIntegralInRange<int64_t>(1, 3), m = in_.ConsumeIntegralInRange<int64_t>(1, 16),
                  k = in_.ConsumeIntegralInRange<int64_t>(1, 16), n = in_.ConsumeIntegralInRange<int64_t>(1, 16);
    auto a = input({b, m, k});
    auto w = input({in_.ConsumeBool() ? b : 1, k, n});
    return a && w ? g_.matmul(a, w, dg::MatmulAttr()) : nullptr;
  }

  dg::TensorPtr conv() {
    const int64_t groups = in_.ConsumeBool() ? 1 : 2;
    const int64_t c = groups * in_.ConsumeIntegralInRange<int64_t>(1, 3),
                  k = groups * in_.ConsumeIntegralInRange<int64_t>(1, 3);
    const Dims x_dims{in_.ConsumeIntegralInRange<int64_t>(1, 2), c, in_.ConsumeIntegralInRange<int64_t>(1, 10),
                      in_.ConsumeIntegralInRange<int64_t>(1, 10)};
    const Dims w_dims{k, c / groups, in_.ConsumeIntegralInRange<int64_t>(1, 3),
                      in_.ConsumeIntegralInRange<int64_t>(1, 3)};
    auto attr = dg::ConvFpropAttr()
                    .set_pre_padding(small_dims(in_, 2, 3))
                    .set_post_padding(small_dims(in_, 2, 3))
                    .set_stride(small_dims(in_, 2, 2))
                    .set_dilation(small_dims(in_, 2, 2));
    auto x = input(x_dims);
    auto w = input(w_dims);
    return x && w ? g_.conv_fprop(x, w, attr) : nullptr;
  }

  // Norms read a graph input: its values are exact multiples of 1/8, so no row is nearly constant.
  dg::TensorPtr norm() {
    const Dims x_dims = small_dims(in_, in_.ConsumeIntegralInRange<size_t>(2, 3), 12);
    Dims p_dims = x_dims;
    p_dims[0] = 1;
    auto x = input(x_dims);
    auto scale = input(p_dims);
    if (!x || !scale) return nullptr;
    if (in_.ConsumeBool()) return g_.rmsnorm(x, scale, dg::RmsnormAttr().set_epsilon(1e-5))[0];
    return g_.layernorm(x, scale, input(p_dims), dg::LayernormAttr().set_epsilon(1e-5))[0];
  }

  dg::TensorPtr pool() {
    const Dims window = small_dims(in_, 2, 3);
    Dims pad(2);
    for (size_t i = 0; i < 2; ++i) pad[i] = in_.ConsumeIntegralInRange<int64_t>(0, window[i] - 1);
    auto x = input({in_.ConsumeIntegralInRange<int64_t>(1, 2), in_.ConsumeIntegralInRange<int64_t>(1, 4),
                    in_.ConsumeIntegralInRange<int64_t>(1, 12), in_.ConsumeIntegralInRange<int64_t>(1, 12)});
    const auto mode = in_.PickValueInArray({dg::ResampleMode::MAXPOOL, dg::ResampleMode::AVGPOOL_INCLUDE_PADDING,
                                            dg::ResampleMode::AVGPOOL_EXCLUDE_PADDING});
    auto attr = dg::ResampleAttr()
                    .set_resampling_mode(mode)
                    .set_window(window)
                    .set_stride(small_dims(in_, 2, 2))
                    .set_padding(pad);
    return x ? g_.resample(x, attr) : nullptr;
  }

  // Well-conditioned modes only: ref and the engines may differ by an ulp, never by a cancellation.
  dg::TensorPtr pointwise(const dg::TensorPtr& t) {
    if (in_.ConsumeBool()) {
      const auto mode = in_.PickValueInArray(
          {dg::PointwiseMode::RELU_FWD, dg::PointwiseMode::SIGMOID_FWD, dg::PointwiseMode::TANH_FWD,
           dg::PointwiseMode::GELU_FWD, dg::PointwiseMode::ABS, dg::PointwiseMode::NEG, dg::PointwiseMode::IDENTITY});
      return g_.pointwise(t, dg::PointwiseAttr().set_mode(mode));
    }
    // The second input has the first's dims or 1s, decided per dim.
    Dims dims = inferred_dims(t);
    if (dims.empty()) return t;
    for (auto& d : dims)
      if (in_.ConsumeBool()) d = 1;
    auto other = input(dims);
    const auto mode = in_.PickValueInArray({dg::PointwiseMode::ADD, dg::PointwiseMode::SUB, dg::PointwiseMode::MUL,
                                            dg::PointwiseMode::MAX, dg::PointwiseMode::MIN});
    return other ? g_.pointwise(t, other, dg::PointwiseAttr().set_mode(mode)) : t;
  }

  FuzzedDataProvider& in_;
  dg::Graph& g_;
  dg::DataType type_ = dg::DataType::FLOAT;
  int count_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  dg::Graph g;
  if (!GraphDecoder(in, g).decode()) return 0;
  const std::string json = g.to_json();
  bad_input::RunLimits limits;
  limits.max_elements = 1 << 16;
  limits.max_workspace_bytes = 1 << 26;
  const bad_input::RunResult r = bad_input::run_json_vs_ref(json, dg::fuzz::fuzz_handle(), limits);
  // Validation may refuse what the decoder made (a conv whose kernel does not fit); once a graph
  // is valid, planning, building and running it must succeed and agree with ref.
  const bool refused = !r.status.ok() && (r.stage == "from_json" || r.stage == "validate");
  if (refused) return 0;
  if (!r.status.ok() || !r.mismatch.empty() || !r.executed) {
    std::fprintf(stderr, "fuzz_execute: %s at %s; %s\n%s\n", r.status.to_string().c_str(), r.stage.c_str(),
                 r.mismatch.c_str(), json.c_str());
    __builtin_trap();
  }
  return 0;
}
