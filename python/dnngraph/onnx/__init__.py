"""ONNX models on dnngraph: ``dnngraph.onnx.load(path or ModelProto)`` returns a session whose
``run(output_names, {input_name: array})`` behaves like onnxruntime's ``InferenceSession.run``
(NumPy or any DLPack array in, NumPy arrays out, or device arrays on request), on the CPU or,
with ``device="cuda"``, on the GPU (constants uploaded once, optionally in bf16/fp16, the whole
forward pass capturable in one CUDA graph).

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
         fuse_attention=True, layout_in_numpy=None, device=None, compute_precision=None, output_device="cpu",
         arrays=None, kernel_cache=None, allow_tf32=False):
    """A session for `model` (a path or an onnx.ModelProto).

    handle: the dnngraph handle to run on (a CPU or CUDA one); None makes one for `device`.
    fallback: "error" (raise for any node dnngraph cannot run) or "numpy".
    input_shapes: {input name: dims} fixing the inputs' symbolic dims (shapes are static).
    fold_batchnorm: fold BatchNormalization after a Conv with constant weights into the conv.
    channels_last: images (the 3-D to 5-D values of convolutions, pooling and the elementwise ops
    between them) keep their NCHW dims but get channels-last strides inside the session (NWC, NHWC,
    NDHWC; inputs converted once on the way in, outputs returned C-contiguous); False keeps them
    channels-first.
    fuse_attention: MatMul(Softmax(MatMul(Q, Transpose(K)) [* or / a constant] [+ mask]), V) runs as one sdpa.
    layout_in_numpy: Reshape, Flatten, Squeeze, Unsqueeze and Transpose run on the session's array
    library (NumPy, or torch/CuPy on CUDA) between dnngraph graphs instead of as dnngraph's
    reference-engine copies; None: on CUDA sessions only.
    device: "cpu" (default), "cuda" or "cuda:N" when no handle is given.
    compute_precision: None (the model's types), "bfloat16" or "float16": float32/float16 tensors
    (inputs, constants, results of each graph) are stored in that type, computed in float32.
    output_device: run()'s default for where results go: "cpu" (NumPy) or "cuda" (device arrays).
    arrays: the array library of a CUDA session, "torch" or "cupy" (None: torch when installed).
    kernel_cache: a dnngraph.KernelCache the session's pygraphs share (with other sessions too).
    allow_tf32: float32 convolutions and matmuls may run on tensor cores as TF32 (as PyTorch's
    cudnn.allow_tf32 default; dnngraph's own CUDA engines take FLOAT ones only so)."""
    options = Options(fallback=fallback, fold_batchnorm=fold_batchnorm, channels_last=channels_last,
                      fuse_attention=fuse_attention, layout_in_numpy=layout_in_numpy,
                      compute_precision=compute_precision, output_device=output_device, arrays=arrays,
                      allow_tf32=allow_tf32)
    return InferenceSession(model, handle=handle, input_shapes=input_shapes, options=options, device=device,
                            kernel_cache=kernel_cache)


__all__ = ["InferenceSession", "Options", "SUPPORTED_OPS", "UnsupportedModelError", "load"]
