// pygraph's attention: sdpa and sdpa_backward, with the cuDNN frontend's keyword names. Arguments
// for features dnngraph lacks (block masks, score modifiers, sink tokens) are refused by name, not
// ignored.

#include "pygraph.hpp"

namespace dnngraph::python {
namespace {

using Pair = std::tuple<TensorPtr, TensorPtr>;
using Triple = std::tuple<TensorPtr, TensorPtr, TensorPtr>;

// The mask and scale arguments both ops share, as the frontend spells them.
struct MaskArgs {
  nb::handle attn_scale;
  bool causal = false, causal_bottom_right = false;
  std::optional<DiagonalAlignment> alignment;
  std::optional<int64_t> left, right, window;
  bool use_padding_mask = false;
  TensorPtr seq_len_q, seq_len_kv;
  TensorPtr bias;
  bool alibi = false;
  nb::handle dropout;
};

// The frontend's dropout=(probability, seed, offset); its (mask, scale) form is refused.
template <class Attr>
void apply_dropout(const char* op, nb::handle dropout, Attr& a) {
  if (dropout.is_none()) return;
  const std::string who = std::string(op) + " '" + a.get_name() + "': ";
  if (!nb::isinstance<nb::tuple>(dropout) && !nb::isinstance<nb::list>(dropout))
    fail(ErrorCode::INVALID_VALUE, who + "dropout must be a tuple (probability, seed, offset)");
  const nb::sequence seq = nb::borrow<nb::sequence>(dropout);
  if (nb::len(seq) != 3)
    fail(ErrorCode::INVALID_VALUE,
         who + "dropout must be (probability, seed, offset); the frontend's (mask, scale) form asks for a "
               "user-given dropout mask, which dnngraph does not support");
  TensorPtr seed, offset;
  if (!nb::try_cast(seq[1], seed) || !nb::try_cast(seq[2], offset) || !seed || !offset)
    fail(ErrorCode::INVALID_VALUE, who + "dropout's seed and offset must be tensors of the graph");
  a.set_dropout(nb::cast<double>(seq[0]), seed, offset);
}

template <class Attr>
void apply_masks(const char* op, const MaskArgs& m, Attr& a) {
  if (!m.attn_scale.is_none()) {
    if (!PyFloat_Check(m.attn_scale.ptr()) && !PyLong_Check(m.attn_scale.ptr()))
      fail(ErrorCode::INVALID_VALUE, std::string(op) + ": attn_scale must be a number (a tensor scale is not supported)");
    a.set_attn_scale(nb::cast<double>(m.attn_scale));
  }
  if (m.causal) a.set_causal_mask(true);
  if (m.causal_bottom_right) a.set_causal_mask_bottom_right(true);
  if (m.alignment) a.set_diagonal_alignment(*m.alignment);
  if (m.window) a.set_diagonal_band_left_bound(*m.window);
  if (m.left) a.set_diagonal_band_left_bound(*m.left);
  if (m.right) a.set_diagonal_band_right_bound(*m.right);
  if (m.use_padding_mask) a.set_padding_mask(true);
  if (m.seq_len_q) a.set_seq_len_q(m.seq_len_q);
  if (m.seq_len_kv) a.set_seq_len_kv(m.seq_len_kv);
  if (m.bias) a.set_bias(m.bias);
  a.set_alibi_mask(m.alibi);
  apply_dropout(op, m.dropout, a);
}

template <class A>
A named(A attr, nb::handle compute, std::string name) {
  attr.set_compute_data_type(optional_data_type(compute)).set_name(std::move(name));
  return attr;
}

// A frontend argument for a feature dnngraph does not have: an error naming it when it is used.
void refuse(bool used, const char* op, const std::string& node, const char* argument, const char* feature) {
  if (used)
    fail(ErrorCode::INVALID_VALUE, std::string(op) + " '" + node + "': " + argument + " asks for " + feature +
                                       ", which dnngraph's " + op + " does not support");
}

#define DG_SDPA_MASK_ARGS                                                                                        \
  nb::arg("attn_scale").none() = nb::none(), nb::arg("use_causal_mask") = false,                                \
      nb::arg("use_causal_mask_bottom_right") = false, nb::arg("diagonal_alignment").none() = nb::none(),       \
      nb::arg("diagonal_band_left_bound").none() = nb::none(), nb::arg("diagonal_band_right_bound").none() = nb::none(), \
      nb::arg("sliding_window_length").none() = nb::none(), nb::arg("use_padding_mask") = false,                \
      nb::arg("seq_len_q").none() = nb::none(), nb::arg("seq_len_kv").none() = nb::none(),                      \
      nb::arg("bias").none() = nb::none(), nb::arg("use_alibi_mask") = false, nb::arg("dropout").none() = nb::none()

#define DG_SDPA_MASK_DOC                                                                                  \
  "    attn_scale: a number multiplying Q @ K^T (default 1 / sqrt(d)).\n"                                \
  "    use_causal_mask, use_causal_mask_bottom_right: a causal mask, top-left or bottom-right aligned.\n" \
  "    diagonal_alignment: a dnngraph.diagonal_alignment for the band bounds.\n"                         \
  "    diagonal_band_left_bound, diagonal_band_right_bound: band bounds (None: unbounded).\n"            \
  "    sliding_window_length: the left bound of a sliding window.\n"                                     \
  "    use_padding_mask: mask keys and queries beyond seq_len_kv / seq_len_q.\n"                         \
  "    seq_len_q, seq_len_kv: [b, 1, 1, 1] INT32 tensors of per-batch lengths.\n"                   \
  "    bias: a tensor added to the scores, [b or 1, h or 1, sq, skv] (None: none).\n"                  \
  "    use_alibi_mask: add ALiBi's slope(head) * (key - query) to the scores.\n"                       \
  "    dropout: (probability, seed, offset): drops P's elements with the probability and scales\n"     \
  "        the kept by 1 / (1 - probability); seed and offset are one-element INT64/INT32 tensors\n"  \
  "        keying dnngraph's Philox4x32-10 stream (not cuDNN's: masks differ for the same seed).\n"

// The frontend's sdpa arguments for features dnngraph lacks.
struct SdpaUnsupported {
  nb::handle block_mask, score_mod, score_max, score_sum_exp, sink_token;
  bool unfuse_fma = false;
};

void refuse_sdpa(const std::string& name, const SdpaUnsupported& u) {
  refuse(!u.block_mask.is_none(), "sdpa", name, "block_mask", "a block-sparse mask");
  refuse(!u.score_mod.is_none(), "sdpa", name, "score_mod", "a score modifier graph");
  refuse(!u.score_max.is_none() || !u.score_sum_exp.is_none(), "sdpa", name, "score_max / score_sum_exp",
         "the softmax's max and sum as outputs");
  refuse(!u.sink_token.is_none(), "sdpa", name, "sink_token", "attention sinks");
  refuse(u.unfuse_fma, "sdpa", name, "unfuse_fma", "cuDNN's unfused multiply-add option");
}

// Paged K and V: the tables and the keys per batch.
struct PagedArgs {
  TensorPtr k_table, v_table;
  std::optional<int64_t> max_seq_len_kv;
};

void bind_sdpa(nb::class_<PyGraph>& c) {
  c.def("sdpa",
        [](PyGraph& g, TensorPtr q, TensorPtr k, TensorPtr v, std::optional<bool> is_inference,
           std::optional<bool> generate_stats, nb::handle attn_scale, bool causal, bool causal_br,
           std::optional<DiagonalAlignment> alignment, std::optional<int64_t> left, std::optional<int64_t> right,
           std::optional<int64_t> window, bool use_padding_mask, TensorPtr seq_len_q, TensorPtr seq_len_kv,
           TensorPtr bias, bool alibi, nb::handle dropout, TensorPtr rng_dump, TensorPtr k_table, TensorPtr v_table,
           std::optional<int64_t> max_seq_len_kv, nb::handle block_mask, nb::handle score_mod, nb::handle score_max,
           nb::handle score_sum_exp, nb::handle sink_token, bool unfuse_fma, nb::handle ct, std::string name,
           std::optional<AttentionImplementation> implementation) {
          if (implementation && *implementation != AttentionImplementation::AUTO)
            fail(ErrorCode::INVALID_VALUE, "sdpa '" + name + "': implementation " +
                                               nb::cast<std::string>(nb::str(nb::cast(*implementation))) +
                                               " names a cuDNN kernel family; dnngraph takes AUTO and picks "
                                               "among its engines (select_engines chooses them by name)");
          refuse_sdpa(name, {block_mask, score_mod, score_max, score_sum_exp, sink_token, unfuse_fma});
          auto a = named(SdpaAttr(), ct, std::move(name));
          bool inference = true;
          if (generate_stats) inference = !*generate_stats;
          if (is_inference) inference = *is_inference;
          a.set_is_inference(inference);
          apply_masks("sdpa", {attn_scale, causal, causal_br, alignment, left, right, window, use_padding_mask,
                               std::move(seq_len_q), std::move(seq_len_kv), std::move(bias), alibi, dropout},
                      a);
          if (rng_dump) a.set_rng_dump(rng_dump);
          if (k_table) a.set_paged_attention_k_table(std::move(k_table));
          if (v_table) a.set_paged_attention_v_table(std::move(v_table));
          if (max_seq_len_kv) a.set_paged_attention_max_seq_len_kv(*max_seq_len_kv);
          auto [o, stats] = g.graph.sdpa(std::move(q), std::move(k), std::move(v), a);
          return Pair{g.produced(o), inference ? nullptr : g.produced(stats)};
        },
        nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("is_inference").none() = nb::none(),
        nb::arg("generate_stats").none() = nb::none(), DG_SDPA_MASK_ARGS, nb::arg("rng_dump").none() = nb::none(),
        nb::arg("paged_attention_k_table").none() = nb::none(), nb::arg("paged_attention_v_table").none() = nb::none(),
        nb::arg("paged_attention_max_seq_len_kv").none() = nb::none(), nb::arg("block_mask").none() = nb::none(),
        nb::arg("score_mod").none() = nb::none(), nb::arg("score_max").none() = nb::none(),
        nb::arg("score_sum_exp").none() = nb::none(), nb::arg("sink_token").none() = nb::none(),
        nb::arg("unfuse_fma") = false, nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        nb::arg("implementation").none() = nb::none(),
        "(O, Stats): scaled dot-product attention of Q[b,h,sq,d], K[b,hk,skv,d], V[b,hv,skv,dv].\n"
        "Stats (logsumexp) is None for inference. Key j is visible to query i when\n"
        "i - left_bound < j - offset <= i + right_bound (offset 0 top-left, skv - sq bottom-right).\n"
        "\n"
        "Args:\n"
        "    q, k, v: the query, key and value tensors (paged: K and V are containers of blocks).\n"
        "    is_inference: no Stats output (default True; generate_stats=True means False).\n"
        "    generate_stats: the frontend's other spelling of not is_inference.\n" DG_SDPA_MASK_DOC
        "    rng_dump: a [b, h, sq, skv] FLOAT tensor that receives the dropout mask (1 kept, 0 dropped).\n"
        "    paged_attention_k_table, paged_attention_v_table: [b, 1, pages, 1] INT32 tables naming the\n"
        "        container block of each page of keys (block size: K's dim 2).\n"
        "    paged_attention_max_seq_len_kv: the keys per batch with paged K and V.\n"
        "    block_mask, score_mod, score_max, score_sum_exp, sink_token, unfuse_fma: cuDNN features\n"
        "        dnngraph lacks; each must be left at its default.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "    implementation: attention_implementation.AUTO (or None).\n"
        "\n"
        "Raises:\n"
        "    ValueError: implementation is COMPOSITE or UNIFIED, a feature dnngraph lacks is asked for,\n"
        "        dropout is not (probability, seed, offset), or attn_scale is not a number.");
}

// The frontend's sdpa_backward arguments for features dnngraph lacks.
struct BackwardUnsupported {
  nb::handle rng_dump, score_mod, score_mod_bprop, sink_token, d_sink_token;
};

void refuse_backward(const std::string& name, const BackwardUnsupported& u) {
  refuse(!u.rng_dump.is_none(), "sdpa_backward", name, "rng_dump",
         "a dump of the dropout mask (the forward's rng_dump gives it)");
  refuse(!u.score_mod.is_none() || !u.score_mod_bprop.is_none(), "sdpa_backward", name, "score_mod",
         "a score modifier graph");
  refuse(!u.sink_token.is_none(), "sdpa_backward", name, "sink_token", "attention sinks");
  refuse(!u.d_sink_token.is_none(), "sdpa_backward", name, "dSink_token", "attention sinks");
}

void bind_sdpa_backward(nb::class_<PyGraph>& c) {
  c.def("sdpa_backward",
        [](PyGraph& g, TensorPtr q, TensorPtr k, TensorPtr v, TensorPtr o, TensorPtr d_o, TensorPtr stats,
           nb::handle attn_scale, bool causal, bool causal_br, std::optional<DiagonalAlignment> alignment,
           std::optional<int64_t> left, std::optional<int64_t> right, std::optional<int64_t> window,
           bool use_padding_mask, TensorPtr seq_len_q, TensorPtr seq_len_kv, TensorPtr bias, bool alibi,
           nb::handle dropout, TensorPtr d_bias, nb::handle rng_dump, nb::handle score_mod, nb::handle score_mod_bprop,
           nb::handle sink_token, nb::handle d_sink_token, std::optional<int64_t> /*max_total_seq_len_q*/,
           std::optional<int64_t> /*max_total_seq_len_kv*/, bool use_deterministic_algorithm, nb::handle ct,
           std::string name) {
          refuse_backward(name, {rng_dump, score_mod, score_mod_bprop, sink_token, d_sink_token});
          auto a = named(SdpaBackwardAttr(), ct, std::move(name));
          apply_masks("sdpa_backward", {attn_scale, causal, causal_br, alignment, left, right, window,
                                        use_padding_mask, std::move(seq_len_q), std::move(seq_len_kv),
                                        std::move(bias), alibi, dropout},
                      a);
          if (d_bias) a.set_dbias(std::move(d_bias));
          a.set_deterministic_algorithm(use_deterministic_algorithm);
          auto [dq, dk, dv] = g.graph.sdpa_backward(std::move(q), std::move(k), std::move(v), std::move(o),
                                                    std::move(d_o), std::move(stats), a);
          return Triple{g.produced(dq), g.produced(dk), g.produced(dv)};
        },
        nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("o"), nb::arg("dO"), nb::arg("stats"), DG_SDPA_MASK_ARGS,
        nb::arg("dBias").none() = nb::none(), nb::arg("rng_dump").none() = nb::none(),
        nb::arg("score_mod").none() = nb::none(), nb::arg("score_mod_bprop").none() = nb::none(),
        nb::arg("sink_token").none() = nb::none(), nb::arg("dSink_token").none() = nb::none(),
        nb::arg("max_total_seq_len_q").none() = nb::none(), nb::arg("max_total_seq_len_kv").none() = nb::none(),
        nb::arg("use_deterministic_algorithm") = false, nb::arg("compute_data_type").none() = nb::none(),
        nb::arg("name") = "",
        "(dQ, dK, dV): the gradients of sdpa from its inputs, its O and Stats (the forward's, with\n"
        "is_inference=False) and dO. The masks, scale, bias and dropout tuple must be the forward's (the\n"
        "same seed and offset regenerate its dropout mask). dQ, dK and dV take the dims and layouts of Q,\n"
        "K and V unless set (GQA/MQA: dK, dV sum over each group's heads).\n"
        "\n"
        "Args:\n"
        "    q, k, v: the forward's query, key and value tensors.\n"
        "    o: the forward's output O.\n"
        "    dO: the gradient of the loss with respect to O.\n"
        "    stats: the forward's Stats (logsumexp, [b, h, sq, 1] FLOAT).\n" DG_SDPA_MASK_DOC
        "    dBias: a tensor of the bias's dims that receives its gradient (summed over broadcast dims).\n"
        "    rng_dump, score_mod, score_mod_bprop, sink_token, dSink_token: features dnngraph's backward\n"
        "        lacks; each must be left at its default.\n"
        "    max_total_seq_len_q, max_total_seq_len_kv: the frontend's size hints for ragged tensors;\n"
        "        dnngraph reads the ragged offsets at run time and needs no hint, so they change nothing.\n"
        "    use_deterministic_algorithm: the same bits on every run. The CPU engine and the CUDA mma.sync\n"
        "        core always give them; the CUDA wgmma core (sm_90) adds dQ's partial sums by atomics and\n"
        "        is not offered for such a node.\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: a feature dnngraph lacks is asked for, dropout is not (probability, seed, offset),\n"
        "        or attn_scale is not a number.");
}

}  // namespace

void bind_pygraph_sdpa(nb::class_<PyGraph>& c) {
  bind_sdpa(c);
  bind_sdpa_backward(c);
}

}  // namespace dnngraph::python
