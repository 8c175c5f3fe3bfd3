// pygraph's attention: sdpa and sdpa_backward, with the cuDNN frontend's keyword names. Arguments
// for features dnngraph lacks (bias, ALiBi, dropout, sink tokens) are refused by name, not ignored.

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
};

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
}

template <class A>
A named(A attr, nb::handle compute, std::string name) {
  attr.set_compute_data_type(optional_data_type(compute)).set_name(std::move(name));
  return attr;
}

// A frontend argument for a feature dnngraph does not have: an error naming it when it is used.
void refuse(bool used, const std::string& node, const char* argument, const char* feature) {
  if (used)
    fail(ErrorCode::INVALID_VALUE, "sdpa_backward '" + node + "': " + argument + " asks for " + feature +
                                       ", which dnngraph's sdpa_backward does not support");
}

#define DG_SDPA_MASK_ARGS                                                                                        \
  nb::arg("attn_scale").none() = nb::none(), nb::arg("use_causal_mask") = false,                                \
      nb::arg("use_causal_mask_bottom_right") = false, nb::arg("diagonal_alignment").none() = nb::none(),       \
      nb::arg("diagonal_band_left_bound").none() = nb::none(), nb::arg("diagonal_band_right_bound").none() = nb::none(), \
      nb::arg("sliding_window_length").none() = nb::none(), nb::arg("use_padding_mask") = false,                \
      nb::arg("seq_len_q").none() = nb::none(), nb::arg("seq_len_kv").none() = nb::none()

#define DG_SDPA_MASK_DOC                                                                                  \
  "    attn_scale: a number multiplying Q @ K^T (default 1 / sqrt(d)).\n"                                \
  "    use_causal_mask, use_causal_mask_bottom_right: a causal mask, top-left or bottom-right aligned.\n" \
  "    diagonal_alignment: a dnngraph.diagonal_alignment for the band bounds.\n"                         \
  "    diagonal_band_left_bound, diagonal_band_right_bound: band bounds (None: unbounded).\n"            \
  "    sliding_window_length: the left bound of a sliding window.\n"                                     \
  "    use_padding_mask: mask keys and queries beyond seq_len_kv / seq_len_q.\n"                         \
  "    seq_len_q, seq_len_kv: [b, 1, 1, 1] INT32 tensors of per-batch lengths.\n"

void bind_sdpa(nb::class_<PyGraph>& c) {
  c.def("sdpa",
        [](PyGraph& g, TensorPtr q, TensorPtr k, TensorPtr v, std::optional<bool> is_inference,
           std::optional<bool> generate_stats, nb::handle attn_scale, bool causal, bool causal_br,
           std::optional<DiagonalAlignment> alignment, std::optional<int64_t> left, std::optional<int64_t> right,
           std::optional<int64_t> window, bool use_padding_mask, TensorPtr seq_len_q, TensorPtr seq_len_kv,
           nb::handle ct, std::string name, std::optional<AttentionImplementation> implementation) {
          if (implementation && *implementation != AttentionImplementation::AUTO)
            fail(ErrorCode::INVALID_VALUE, "sdpa '" + name + "': implementation " +
                                               nb::cast<std::string>(nb::str(nb::cast(*implementation))) +
                                               " names a cuDNN kernel family; dnngraph takes AUTO and picks "
                                               "among its engines (select_engines chooses them by name)");
          auto a = named(SdpaAttr(), ct, std::move(name));
          bool inference = true;
          if (generate_stats) inference = !*generate_stats;
          if (is_inference) inference = *is_inference;
          a.set_is_inference(inference);
          apply_masks("sdpa", {attn_scale, causal, causal_br, alignment, left, right, window, use_padding_mask,
                               std::move(seq_len_q), std::move(seq_len_kv)},
                      a);
          auto [o, stats] = g.graph.sdpa(std::move(q), std::move(k), std::move(v), a);
          return Pair{g.produced(o), inference ? nullptr : g.produced(stats)};
        },
        nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("is_inference").none() = nb::none(),
        nb::arg("generate_stats").none() = nb::none(), DG_SDPA_MASK_ARGS,
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        nb::arg("implementation").none() = nb::none(),
        "(O, Stats): scaled dot-product attention of Q[b,h,sq,d], K[b,hk,skv,d], V[b,hk,skv,dv].\n"
        "Stats (logsumexp) is None for inference. Key j is visible to query i when\n"
        "i - left_bound < j - offset <= i + right_bound (offset 0 top-left, skv - sq bottom-right).\n"
        "\n"
        "Args:\n"
        "    q, k, v: the query, key and value tensors.\n"
        "    is_inference: no Stats output (default True; generate_stats=True means False).\n"
        "    generate_stats: the frontend's other spelling of not is_inference.\n" DG_SDPA_MASK_DOC
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "    implementation: attention_implementation.AUTO (or None).\n"
        "\n"
        "Raises:\n"
        "    ValueError: implementation is COMPOSITE or UNIFIED, or attn_scale is not a number.");
}

// The frontend's arguments for features dnngraph lacks, each refused when used.
struct UnsupportedArgs {
  nb::handle bias, d_bias, dropout, rng_dump, sink_token, d_sink_token;
  bool alibi = false;
};

void refuse_unsupported(const std::string& name, const UnsupportedArgs& u) {
  refuse(!u.bias.is_none(), name, "bias", "an attention bias");
  refuse(!u.d_bias.is_none(), name, "dBias", "the bias gradient");
  refuse(u.alibi, name, "use_alibi_mask", "an ALiBi mask");
  refuse(!u.dropout.is_none(), name, "dropout", "dropout");
  refuse(!u.rng_dump.is_none(), name, "rng_dump", "dropout's random mask");
  refuse(!u.sink_token.is_none(), name, "sink_token", "attention sinks");
  refuse(!u.d_sink_token.is_none(), name, "dSink_token", "attention sinks");
}

void bind_sdpa_backward(nb::class_<PyGraph>& c) {
  c.def("sdpa_backward",
        [](PyGraph& g, TensorPtr q, TensorPtr k, TensorPtr v, TensorPtr o, TensorPtr d_o, TensorPtr stats,
           nb::handle attn_scale, bool causal, bool causal_br, std::optional<DiagonalAlignment> alignment,
           std::optional<int64_t> left, std::optional<int64_t> right, std::optional<int64_t> window,
           bool use_padding_mask, TensorPtr seq_len_q, TensorPtr seq_len_kv, nb::handle bias, nb::handle d_bias,
           bool alibi, nb::handle dropout, nb::handle rng_dump, nb::handle sink_token, nb::handle d_sink_token,
           std::optional<int64_t> /*max_total_seq_len_q*/, std::optional<int64_t> /*max_total_seq_len_kv*/,
           bool /*use_deterministic_algorithm*/, nb::handle ct, std::string name) {
          refuse_unsupported(name, {bias, d_bias, dropout, rng_dump, sink_token, d_sink_token, alibi});
          auto a = named(SdpaBackwardAttr(), ct, std::move(name));
          apply_masks("sdpa_backward", {attn_scale, causal, causal_br, alignment, left, right, window,
                                        use_padding_mask, std::move(seq_len_q), std::move(seq_len_kv)},
                      a);
          auto [dq, dk, dv] = g.graph.sdpa_backward(std::move(q), std::move(k), std::move(v), std::move(o),
                                                    std::move(d_o), std::move(stats), a);
          return Triple{g.produced(dq), g.produced(dk), g.produced(dv)};
        },
        nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("o"), nb::arg("dO"), nb::arg("stats"), DG_SDPA_MASK_ARGS,
        nb::arg("bias").none() = nb::none(), nb::arg("dBias").none() = nb::none(),
        nb::arg("use_alibi_mask") = false, nb::arg("dropout").none() = nb::none(),
        nb::arg("rng_dump").none() = nb::none(), nb::arg("sink_token").none() = nb::none(),
        nb::arg("dSink_token").none() = nb::none(), nb::arg("max_total_seq_len_q").none() = nb::none(),
        nb::arg("max_total_seq_len_kv").none() = nb::none(), nb::arg("use_deterministic_algorithm") = false,
        nb::arg("compute_data_type").none() = nb::none(), nb::arg("name") = "",
        "(dQ, dK, dV): the gradients of sdpa from its inputs, its O and Stats (the forward's, with\n"
        "is_inference=False) and dO. The masks and scale must be the forward's. dQ, dK and dV take the\n"
        "dims and layouts of Q, K and V unless set (GQA/MQA: dK, dV sum over each group's heads).\n"
        "\n"
        "Args:\n"
        "    q, k, v: the forward's query, key and value tensors.\n"
        "    o: the forward's output O.\n"
        "    dO: the gradient of the loss with respect to O.\n"
        "    stats: the forward's Stats (logsumexp, [b, h, sq, 1] FLOAT).\n" DG_SDPA_MASK_DOC
        "    bias, dBias, use_alibi_mask, dropout, rng_dump, sink_token, dSink_token: features dnngraph\n"
        "        lacks; each must be left at its default.\n"
        "    max_total_seq_len_q, max_total_seq_len_kv: the frontend's size hints for ragged tensors;\n"
        "        ragged offsets are not supported, so they change nothing.\n"
        "    use_deterministic_algorithm: accepted; dnngraph's engines give the same bits on every run\n"
        "        of a plan (no atomics in the CPU engine, nor in the order of the CUDA engine's sums).\n"
        "    compute_data_type: the op's compute type (None: the graph's).\n"
        "    name: the node's name (\"\": \"<op>.<n>\").\n"
        "\n"
        "Raises:\n"
        "    ValueError: a feature dnngraph lacks is asked for, or attn_scale is not a number.");
}

}  // namespace

void bind_pygraph_sdpa(nb::class_<PyGraph>& c) {
  bind_sdpa(c);
  bind_sdpa_backward(c);
}

}  // namespace dnngraph::python
