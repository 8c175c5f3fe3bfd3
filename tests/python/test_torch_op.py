"""dnngraph.torch.op: a built pygraph as a torch custom op, in eager mode, inside torch.compile
(fullgraph: no graph break), under CUDA graph capture (GPU only), and its errors."""
import pytest

torch = pytest.importorskip("torch")

import dnngraph  # noqa: E402
import dnngraph.torch as dt  # noqa: E402


def _bias_relu_graph(device, n=4, c=8):
    handle = dnngraph.create_handle(device)
    g = dnngraph.pygraph(io_data_type=torch.float32, intermediate_data_type=torch.float32,
                         compute_data_type=torch.float32, handle=handle)
    x = g.tensor(dim=[n, c], data_type=torch.float32, name="x")
    w = g.tensor(dim=[c, c], data_type=torch.float32, name="w")
    b = g.tensor(dim=[1, c], data_type=torch.float32, name="b")
    y = g.relu(g.bias(g.matmul(x, w), b))
    y.set_output(True).set_data_type(dnngraph.data_type.FLOAT)
    g.build()
    return g, [x, w, b], [y]


def _reference(x, w, b):
    return torch.relu(x @ w + b)


def test_op_runs_in_eager_mode():
    g, ins, outs = _bias_relu_graph("cpu")
    f = dt.op(g, ins, outs, name="dnngraph_test::eager_bias_relu")
    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(1, 8)
    torch.testing.assert_close(f(x, w, b), _reference(x, w, b), rtol=1e-5, atol=1e-5)


def test_op_inside_torch_compile_without_a_graph_break():
    g, ins, outs = _bias_relu_graph("cpu")
    f = dt.op(g, ins, outs, name="dnngraph_test::compiled_bias_relu")

    def model(x, w, b):
        return f(x * 2.0, w, b) + 1.0

    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(1, 8)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)  # fullgraph: a break would raise
    torch.testing.assert_close(compiled(x, w, b), _reference(x * 2.0, w, b) + 1.0, rtol=1e-5, atol=1e-5)
    # The fake implementation gives the graph's output layout without running it.
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fx, fw, fb = (mode.from_tensor(t) for t in (x, w, b))
        y = f(fx, fw, fb)
    assert tuple(y.shape) == (4, 8) and y.dtype == torch.float32


def test_op_errors_name_the_tensor_and_the_rule():
    g, ins, outs = _bias_relu_graph("cpu")
    with pytest.raises(ValueError, match="name 'bad name' is not 'namespace::opname'"):
        dt.op(g, ins, outs, name="bad name")
    with pytest.raises(ValueError, match=r"tensor uid\(s\) \[\d+\] are listed as inputs and as outputs"):
        dt.op(g, ins, [ins[0]], name="dnngraph_test::bad_output")
    h = dnngraph.pygraph(io_data_type=torch.float32, handle=dnngraph.create_handle("cpu"))
    hidden = h.relu(h.tensor(dim=[2, 2], data_type=torch.float32, name="a"), name="r")
    with pytest.raises(ValueError, match="output 'r::OUT' is a virtual tensor of the graph"):
        dt.op(h, [], [hidden], name="dnngraph_test::virtual_output")
    f = dt.op(g, ins, outs, name="dnngraph_test::arity")
    with pytest.raises(RuntimeError, match=r"missing value for argument 'b'.*\(Tensor x, Tensor w, Tensor b\)"):
        f(torch.randn(4, 8), torch.randn(8, 8))
    with pytest.raises(ValueError, match="tensor 'w'"):  # the pack's own check, naming the tensor
        f(torch.randn(4, 8), torch.randn(8, 8, dtype=torch.float64), torch.randn(1, 8))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_op_under_cuda_graph_capture():
    g, ins, outs = _bias_relu_graph("cuda")
    f = dt.op(g, ins, outs, name="dnngraph_test::captured_bias_relu")
    x, w, b = (torch.randn(*s, device="cuda") for s in ((4, 8), (8, 8), (1, 8)))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        f(x, w, b)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    cuda_graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cuda_graph):
        y = f(x, w, b)
    x.copy_(torch.randn(4, 8, device="cuda"))
    cuda_graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, _reference(x, w, b), rtol=1e-3, atol=1e-3)
