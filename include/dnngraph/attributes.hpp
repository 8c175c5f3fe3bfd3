// One attribute class per operation; setters chain, as in the cuDNN frontend.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dnngraph/tensor.hpp"
#include "dnngraph/types.hpp"

#include "dnngraph/export.hpp"

DNNGRAPH_API_BEGIN
namespace dnngraph {

// Name and compute type, shared by every op's attributes.
template <class Derived>
class OpAttrBase {
 public:
  Derived& set_name(std::string name) { name_ = std::move(name); return self(); }
  Derived& set_compute_data_type(DataType t) { compute_data_type_ = t; return self(); }
  const std::string& get_name() const { return name_; }
  DataType get_compute_data_type() const { return compute_data_type_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  std::string name_;
  DataType compute_data_type_ = DataType::NOT_SET;
};

// Shared by conv_fprop, conv_dgrad and conv_wgrad. Dims are always ordered N, C, spatial...;
// strides decide the memory layout (NCHW, NHWC or anything else). Groups follow from channel counts.
template <class Derived>
class ConvAttrBase : public OpAttrBase<Derived> {
 public:
  Derived& set_padding(std::vector<int64_t> p) { pre_padding_ = p; post_padding_ = std::move(p); return self(); }
  Derived& set_pre_padding(std::vector<int64_t> p) { pre_padding_ = std::move(p); return self(); }
  Derived& set_post_padding(std::vector<int64_t> p) { post_padding_ = std::move(p); return self(); }
  Derived& set_stride(std::vector<int64_t> s) { stride_ = std::move(s); return self(); }
  Derived& set_dilation(std::vector<int64_t> d) { dilation_ = std::move(d); return self(); }
  const std::vector<int64_t>& get_pre_padding() const { return pre_padding_; }
  const std::vector<int64_t>& get_post_padding() const { return post_padding_; }
  const std::vector<int64_t>& get_stride() const { return stride_; }
  const std::vector<int64_t>& get_dilation() const { return dilation_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  std::vector<int64_t> pre_padding_, post_padding_, stride_, dilation_;
};

class ConvFpropAttr : public ConvAttrBase<ConvFpropAttr> {};   // (X, W) -> Y
class ConvDgradAttr : public ConvAttrBase<ConvDgradAttr> {};   // (DY, W) -> DX: transposed convolution
class ConvWgradAttr : public ConvAttrBase<ConvWgradAttr> {};   // (DY, X) -> DW

// (A[..., M, K], B[..., K, N]) -> C[..., M, N]; batch dims broadcast.
class MatmulAttr : public OpAttrBase<MatmulAttr> {};

class PointwiseAttr : public OpAttrBase<PointwiseAttr> {
 public:
  PointwiseAttr& set_mode(PointwiseMode m) { mode_ = m; return *this; }
  PointwiseAttr& set_relu_lower_clip(double v) { relu_lower_clip_ = v; return *this; }
  PointwiseAttr& set_relu_upper_clip(double v) { relu_upper_clip_ = v; return *this; }
  PointwiseAttr& set_relu_lower_clip_slope(double v) { relu_lower_clip_slope_ = v; return *this; }
  PointwiseAttr& set_elu_alpha(double v) { elu_alpha_ = v; return *this; }
  PointwiseAttr& set_softplus_beta(double v) { softplus_beta_ = v; return *this; }
  PointwiseAttr& set_swish_beta(double v) { swish_beta_ = v; return *this; }
  PointwiseAttr& set_axis(int64_t a) { axis_ = a; return *this; }  // GEN_INDEX
  PointwiseMode get_mode() const { return mode_; }
  double get_relu_lower_clip() const { return relu_lower_clip_; }
  std::optional<double> get_relu_upper_clip() const { return relu_upper_clip_; }
  double get_relu_lower_clip_slope() const { return relu_lower_clip_slope_; }
  double get_elu_alpha() const { return elu_alpha_; }
  double get_softplus_beta() const { return softplus_beta_; }
  double get_swish_beta() const { return swish_beta_; }
  int64_t get_axis() const { return axis_; }

 private:
  PointwiseMode mode_ = PointwiseMode::NOT_SET;
  double relu_lower_clip_ = 0.0;
  std::optional<double> relu_upper_clip_;
  double relu_lower_clip_slope_ = 0.0;
  double elu_alpha_ = 1.0;
  double softplus_beta_ = 1.0;
  double swish_beta_ = 1.0;
  int64_t axis_ = 0;
};

// X -> Y; the axes that are 1 in Y's dims (and larger in X's) are reduced. Y's dims default to all 1s.
class ReductionAttr : public OpAttrBase<ReductionAttr> {
 public:
  ReductionAttr& set_mode(ReductionMode m) { mode_ = m; return *this; }
  ReductionMode get_mode() const { return mode_; }

 private:
  ReductionMode mode_ = ReductionMode::NOT_SET;
};

// X -> (SUM, SQ_SUM): per channel (dim 1), the sum and the sum of squares of X over every other
// dim (the cuDNN frontend's genstats: a conv's output statistics for a following batchnorm).
// Both are [1, C, 1, ...], FLOAT unless set.
class GenstatsAttr : public OpAttrBase<GenstatsAttr> {};

// Y = (X - mean) * inv_variance * scale + bias, per channel (dim 1).
class BatchnormInferenceAttr : public OpAttrBase<BatchnormInferenceAttr> {};

// Epsilon is a pass-by-value tensor, as in the cuDNN frontend; a number makes one.
template <class Derived>
class NormAttrBase : public OpAttrBase<Derived> {
 public:
  Derived& set_forward_phase(NormFwdPhase p) { phase_ = p; return self(); }
  Derived& set_epsilon(TensorPtr eps) { epsilon_ = std::move(eps); return self(); }
  Derived& set_epsilon(double eps) {
    epsilon_ = std::make_shared<TensorAttr>();
    epsilon_->set_name("epsilon").set_data_type(DataType::FLOAT).set_value(eps);
    return self();
  }
  NormFwdPhase get_forward_phase() const { return phase_; }
  const TensorPtr& get_epsilon() const { return epsilon_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  NormFwdPhase phase_ = NormFwdPhase::INFERENCE;
  TensorPtr epsilon_;
};

// (X, scale, bias) -> (Y, mean, inv_variance); normalizes over every dim but the first.
class LayernormAttr : public NormAttrBase<LayernormAttr> {};
// (X, scale, bias) -> (Y, mean, inv_variance): adaptive layernorm (the frontend's adalayernorm):
// X [B, rows..., D...] normalized over the trailing dims where the scale is not 1, with a scale
// and a bias per batch ([B, 1, ..., D...]; dim 0 may be 1). A composite: Graph::adalayernorm
// builds reductions and pointwise nodes named "<name>::...", which every engine serves.
class AdaLayernormAttr : public NormAttrBase<AdaLayernormAttr> {};
// (X, scale[, bias]) -> (Y, inv_rms); normalizes over every dim but the first.
class RmsnormAttr : public NormAttrBase<RmsnormAttr> {
 public:
  RmsnormAttr& set_bias(TensorPtr b) { bias_ = std::move(b); return *this; }
  const TensorPtr& get_bias() const { return bias_; }

 private:
  TensorPtr bias_;
};

// ---- normalization training ops (issue #18). Statistics (mean, inverse variance) are fp32 by
// default; each op's groups are what its statistics' dims say: per row (dim 0) for layernorm and
// rmsnorm, per channel (dim 1) for batchnorm, per (dim 0, dim 1) for instancenorm.

// (DY, X, scale, mean, inv_variance) -> (DX, dscale, dbias): the gradient of layernorm, from the
// forward's saved statistics; normalizes over every dim but the first.
class LayernormBackwardAttr : public OpAttrBase<LayernormBackwardAttr> {};

// (DY, X, scale, mean, inv_variance) -> (DX, dscale, dbias): the gradient of adalayernorm; dscale
// and dbias have the scale's dims (summed over the rows, and over dim 0 when the scale's is 1).
class AdaLayernormBackwardAttr : public OpAttrBase<AdaLayernormBackwardAttr> {};

// (DY, X, scale, inv_rms) -> (DX, dscale[, dbias]); dbias only with set_has_dbias(true) (the
// forward had a bias).
class RmsnormBackwardAttr : public OpAttrBase<RmsnormBackwardAttr> {
 public:
  RmsnormBackwardAttr& set_has_dbias(bool v) { has_dbias_ = v; return *this; }
  bool get_has_dbias() const { return has_dbias_; }

 private:
  bool has_dbias_ = false;
};

// Batchnorm in training: statistics per channel (dim 1) over every other dim; (X, scale, bias)
// -> (Y, mean, inv_variance) and, when previous running statistics are given, the next ones:
// next_mean = (1 - momentum) * mean_prev + momentum * mean, next_var likewise with the unbiased
// variance (as PyTorch's batch_norm). Epsilon and momentum are pass-by-value scalars.
class BatchnormAttr : public OpAttrBase<BatchnormAttr> {
 public:
  BatchnormAttr& set_epsilon(TensorPtr eps) { epsilon_ = std::move(eps); return *this; }
  BatchnormAttr& set_epsilon(double eps) { epsilon_ = scalar("epsilon", eps); return *this; }
  BatchnormAttr& set_previous_running_stats(TensorPtr mean, TensorPtr var, TensorPtr momentum) {
    prev_mean_ = std::move(mean);
    prev_var_ = std::move(var);
    momentum_ = std::move(momentum);
    return *this;
  }
  BatchnormAttr& set_previous_running_stats(TensorPtr mean, TensorPtr var, double momentum) {
    return set_previous_running_stats(std::move(mean), std::move(var), scalar("momentum", momentum));
  }
  const TensorPtr& get_epsilon() const { return epsilon_; }
  const TensorPtr& get_prev_running_mean() const { return prev_mean_; }
  const TensorPtr& get_prev_running_var() const { return prev_var_; }
  const TensorPtr& get_momentum() const { return momentum_; }

 private:
  static TensorPtr scalar(const char* name, double v) {
    auto t = std::make_shared<TensorAttr>();
    t->set_name(name).set_data_type(DataType::FLOAT).set_value(v);
    return t;
  }
  TensorPtr epsilon_, prev_mean_, prev_var_, momentum_;
};

// (DY, X, scale, mean, inv_variance) -> (DX, dscale, dbias) per channel (dim 1).
class BatchnormBackwardAttr : public OpAttrBase<BatchnormBackwardAttr> {};

// (X, scale, bias) -> (Y, mean, inv_variance): statistics per (dim 0, dim 1) over the spatial
// dims, scale and bias per channel (1, C, 1, ...); statistics (N, C, 1, ...).
class InstancenormAttr : public NormAttrBase<InstancenormAttr> {};

// (DY, X, scale, mean, inv_variance) -> (DX, dscale, dbias), groups as instancenorm's.
class InstancenormBackwardAttr : public OpAttrBase<InstancenormBackwardAttr> {};

// Pooling (window, stride, padding over the spatial dims) and resizing (NEAREST, BILINEAR: the
// output's spatial dims come from the output tensor's dims if set, else from set_scale).
class ResampleAttr : public OpAttrBase<ResampleAttr> {
 public:
  ResampleAttr& set_resampling_mode(ResampleMode m) { mode_ = m; return *this; }
  ResampleAttr& set_window(std::vector<int64_t> w) { window_ = std::move(w); return *this; }
  ResampleAttr& set_stride(std::vector<int64_t> s) { stride_ = std::move(s); return *this; }
  ResampleAttr& set_padding(std::vector<int64_t> p) { pre_padding_ = p; post_padding_ = std::move(p); return *this; }
  ResampleAttr& set_pre_padding(std::vector<int64_t> p) { pre_padding_ = std::move(p); return *this; }
  ResampleAttr& set_post_padding(std::vector<int64_t> p) { post_padding_ = std::move(p); return *this; }
  ResampleAttr& set_scale(std::vector<double> s) { scale_ = std::move(s); return *this; }
  ResampleMode get_resampling_mode() const { return mode_; }
  const std::vector<int64_t>& get_window() const { return window_; }
  const std::vector<int64_t>& get_stride() const { return stride_; }
  const std::vector<int64_t>& get_pre_padding() const { return pre_padding_; }
  const std::vector<int64_t>& get_post_padding() const { return post_padding_; }
  const std::vector<double>& get_scale() const { return scale_; }

 private:
  ResampleMode mode_ = ResampleMode::NOT_SET;
  std::vector<int64_t> window_, stride_, pre_padding_, post_padding_;
  std::vector<double> scale_;
};

// The masks and scale shared by sdpa and sdpa_backward (rules: src/graph/sdpa.cpp).
template <class Derived>
class SdpaMaskAttrBase : public OpAttrBase<Derived> {
 public:
  Derived& set_attn_scale(double s) { attn_scale_ = s; return self(); }
  Derived& set_causal_mask(bool v) { causal_ = v; alignment_ = DiagonalAlignment::TOP_LEFT; return self(); }
  Derived& set_causal_mask_bottom_right(bool v) { causal_ = v; alignment_ = DiagonalAlignment::BOTTOM_RIGHT; return self(); }
  Derived& set_diagonal_alignment(DiagonalAlignment a) { alignment_ = a; return self(); }
  // Keys more than `left` positions left of the diagonal are masked (sliding window).
  Derived& set_diagonal_band_left_bound(int64_t left) { left_bound_ = left; return self(); }
  // Keys more than `right` positions right of the diagonal are masked; 0 is causal.
  Derived& set_diagonal_band_right_bound(int64_t right) { right_bound_ = right; return self(); }
  Derived& set_padding_mask(bool v) { padding_mask_ = v; return self(); }
  Derived& set_seq_len_q(TensorPtr t) { seq_len_q_ = std::move(t); return self(); }
  Derived& set_seq_len_kv(TensorPtr t) { seq_len_kv_ = std::move(t); return self(); }
  // An additive bias on the scores, [b or 1, h or 1, sq, skv], broadcast over dims of size 1.
  Derived& set_bias(TensorPtr t) { bias_ = std::move(t); return self(); }
  // ALiBi: adds slope(head) * (key - query) to the scores, with the slopes of Press et al.
  Derived& set_alibi_mask(bool v) { alibi_ = v; return self(); }
  // Dropout of the softmax's probabilities: each is dropped with `probability` and the kept ones
  // scaled by 1 / (1 - probability). The mask comes from Philox4x32-10 keyed by the seed tensor,
  // counted from the offset tensor (both one INT64 or INT32 element), so the backward, given the
  // same tuple, drops the same elements (src/core/philox.hpp).
  Derived& set_dropout(double probability, TensorPtr seed, TensorPtr offset) {
    dropout_probability_ = probability;
    dropout_seed_ = std::move(seed);
    dropout_offset_ = std::move(offset);
    return self();
  }

  std::optional<double> get_attn_scale() const { return attn_scale_; }
  DiagonalAlignment get_diagonal_alignment() const { return alignment_; }
  // Effective band: causal masks set right = 0 unless a right bound was given.
  std::optional<int64_t> get_diagonal_band_left_bound() const { return left_bound_; }
  std::optional<int64_t> get_diagonal_band_right_bound() const {
    if (right_bound_) return right_bound_;
    if (causal_) return 0;
    return std::nullopt;
  }
  bool get_causal_mask() const { return causal_; }
  bool get_padding_mask() const { return padding_mask_; }
  const TensorPtr& get_seq_len_q() const { return seq_len_q_; }
  const TensorPtr& get_seq_len_kv() const { return seq_len_kv_; }
  const TensorPtr& get_bias() const { return bias_; }
  bool get_alibi_mask() const { return alibi_; }
  // Dropout is on when the probability is set (seed and offset are then required).
  std::optional<double> get_dropout_probability() const { return dropout_probability_; }
  const TensorPtr& get_dropout_seed() const { return dropout_seed_; }
  const TensorPtr& get_dropout_offset() const { return dropout_offset_; }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  std::optional<double> attn_scale_;
  bool causal_ = false;
  DiagonalAlignment alignment_ = DiagonalAlignment::TOP_LEFT;
  std::optional<int64_t> left_bound_, right_bound_;
  bool padding_mask_ = false;
  TensorPtr seq_len_q_, seq_len_kv_, bias_;
  bool alibi_ = false;
  std::optional<double> dropout_probability_;
  TensorPtr dropout_seed_, dropout_offset_;
};

// Scaled dot-product attention forward: Q[b,h,sq,d], K[b,hk,skv,d], V[b,hk,skv,dv] -> O[b,h,sq,dv]
// (and Stats[b,h,sq,1] = logsumexp when not inference). h must be a multiple of hk (GQA/MQA).
class SdpaAttr : public SdpaMaskAttrBase<SdpaAttr> {
 public:
  SdpaAttr& set_is_inference(bool v) { is_inference_ = v; return *this; }
  // A [b, h, sq, skv] FLOAT output that receives the dropout mask (1 kept, 0 dropped).
  SdpaAttr& set_rng_dump(TensorPtr t) { rng_dump_ = std::move(t); return *this; }
  // Paged K and V: K and V are containers [blocks, hk, block_size, d] and the tables [b, 1, pages, 1]
  // INT32 name the container block of each page of keys; max_seq_len_kv is the keys per batch.
  SdpaAttr& set_paged_attention_k_table(TensorPtr t) { k_table_ = std::move(t); return *this; }
  SdpaAttr& set_paged_attention_v_table(TensorPtr t) { v_table_ = std::move(t); return *this; }
  SdpaAttr& set_paged_attention_max_seq_len_kv(int64_t s) { max_seq_len_kv_ = s; return *this; }
  bool get_is_inference() const { return is_inference_; }
  const TensorPtr& get_rng_dump() const { return rng_dump_; }
  const TensorPtr& get_paged_attention_k_table() const { return k_table_; }
  const TensorPtr& get_paged_attention_v_table() const { return v_table_; }
  std::optional<int64_t> get_paged_attention_max_seq_len_kv() const { return max_seq_len_kv_; }

 private:
  bool is_inference_ = true;
  TensorPtr rng_dump_, k_table_, v_table_;
  std::optional<int64_t> max_seq_len_kv_;
};

// Its backward: (Q, K, V, O, dO[b,h,sq,dv], Stats[b,h,sq,1] FLOAT) -> (dQ, dK, dV), in the layouts of
// Q, K and V unless set; the forward's masks and scale must be given again.
// With a bias, set_dbias names the tensor that receives its gradient (of the bias's dims: summed
// over the dims the bias broadcasts).
class SdpaBackwardAttr : public SdpaMaskAttrBase<SdpaBackwardAttr> {
 public:
  SdpaBackwardAttr& set_dbias(TensorPtr t) { dbias_ = std::move(t); return *this; }
  const TensorPtr& get_dbias() const { return dbias_; }
  // The same bits on every run: engines that add partial sums in arrival order (atomics) are not
  // offered for this node (the frontend's use_deterministic_algorithm).
  SdpaBackwardAttr& set_deterministic_algorithm(bool v) { deterministic_ = v; return *this; }
  bool get_deterministic_algorithm() const { return deterministic_; }

 private:
  TensorPtr dbias_;
  bool deterministic_ = false;
};

// Same elements in row-major order, new dims (one may be -1 and is inferred).
class ReshapeAttr : public OpAttrBase<ReshapeAttr> {
 public:
  ReshapeAttr& set_dim(std::vector<int64_t> d) { dim_ = std::move(d); return *this; }
  const std::vector<int64_t>& get_dim() const { return dim_; }

 private:
  std::vector<int64_t> dim_;
};

// Y.dim[i] = X.dim[permutation[i]].
class TransposeAttr : public OpAttrBase<TransposeAttr> {
 public:
  TransposeAttr& set_permutation(std::vector<int64_t> p) { perm_ = std::move(p); return *this; }
  const std::vector<int64_t>& get_permutation() const { return perm_; }

 private:
  std::vector<int64_t> perm_;
};

// Half-open [start, end) per dim; dims left out are taken whole.
class SliceAttr : public OpAttrBase<SliceAttr> {
 public:
  SliceAttr& set_slices(std::vector<std::pair<int64_t, int64_t>> s) { slices_ = std::move(s); return *this; }
  const std::vector<std::pair<int64_t, int64_t>>& get_slices() const { return slices_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> slices_;
};

class ConcatenateAttr : public OpAttrBase<ConcatenateAttr> {
 public:
  ConcatenateAttr& set_axis(int64_t a) { axis_ = a; return *this; }
  int64_t get_axis() const { return axis_; }

 private:
  int64_t axis_ = 0;
};

}  // namespace dnngraph
DNNGRAPH_API_END
