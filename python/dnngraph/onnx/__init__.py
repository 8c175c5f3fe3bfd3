"""ONNX models on dnngraph: ``dnngraph.onnx.load(path or ModelProto)`` returns a session whose
``run(output_names, {input_name: array})`` behaves like onnxruntime's ``InferenceSession.run``
(NumPy or any DLPack array in, NumPy arrays out, on the CPU).

Every node the importer cannot lower is reported by name, op and reason before anything runs:
``load`` raises UnsupportedModelError with the full list, or, with ``fallback="numpy"``, runs
the nodes it has a NumPy evaluator for between dnngraph graphs. docs/onnx.md has the op list."""
try:
    import onnx  # noqa: F401
except ImportError as e:  # the message says what to install, not where the import failed
    raise ImportError("dnngraph.onnx needs the onnx package: pip install onnx") from e

from ._session import TRANSLATORS, InferenceSession, Options, UnsupportedModelError  # noqa: E402

SUPPORTED_OPS = tuple(sorted(op for op in TRANSLATORS if "." not in op))  # ONNX's ops (not the rewrites')


def load(model, handle=None, fallback="error", input_shapes=None, fold_batchnorm=True, channels_last=True,
         fuse_attention=True, layout_in_numpy=False):
    """A session for `model` (a path or an onnx.ModelProto). handle: a CPU dnngraph handle (the
    CPU one when None). fallback: "error" (raise for any node dnngraph cannot run) or "numpy".
    input_shapes: {input name: dims} fixing the inputs' symbolic dims (shapes are static).
    fold_batchnorm: fold BatchNormalization after a Conv with constant weights into the conv.
    channels_last: 4-D tensors keep NCHW dims but get NHWC strides inside the session (inputs
    copied once on the way in, outputs returned C-contiguous); False keeps NCHW strides.
    fuse_attention: MatMul(Softmax(MatMul(Q, Transpose(K)) [* or / a constant]), V) runs as one sdpa.
    layout_in_numpy: Reshape, Flatten, Squeeze, Unsqueeze and Transpose run with NumPy between
    dnngraph graphs (cutting the model there) instead of as dnngraph's reference-engine copies."""
    options = Options(fallback=fallback, fold_batchnorm=fold_batchnorm, channels_last=channels_last,
                      fuse_attention=fuse_attention, layout_in_numpy=layout_in_numpy)
    return InferenceSession(model, handle=handle, input_shapes=input_shapes, options=options)


__all__ = ["InferenceSession", "Options", "SUPPORTED_OPS", "UnsupportedModelError", "load"]
