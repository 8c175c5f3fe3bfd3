"""The `dnngraph` console script (dnngraph._cli, [project.scripts] in pyproject.toml) runs the C++
program that the package carries in dnngraph/bin, with the arguments and exit code passed through.
The build folder lays the package out as the wheel does (python/CMakeLists.txt), so these run the
same code as an installed `dnngraph` command; scripts/check_wheel.sh checks the installed one."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import dnngraph
from dnngraph import _cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
needs_program = pytest.mark.skipif(not os.access(_cli.program(), os.X_OK),
                                   reason="the build has no CLI (DNNGRAPH_BUILD_TOOLS=OFF)")


def _script(*args, prelude=""):
    """Runs the console script's entry point as pip's generated `dnngraph` wrapper does."""
    code = f"import sys\n{prelude}\nfrom dnngraph._cli import main\nsys.exit(main())"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_the_program_lies_inside_the_package():
    assert _cli.program() == pathlib.Path(dnngraph.__file__).resolve().parent / "bin" / "dnngraph"


@needs_program
def test_info_json_through_the_script_is_the_programs_own():
    via_script = _script("info", "--json")
    assert via_script.returncode == 0, via_script.stderr
    direct = subprocess.run([str(_cli.program()), "info", "--json"], capture_output=True, text=True, timeout=120)
    got, want = json.loads(via_script.stdout), json.loads(direct.stdout)
    assert got == want
    assert got["default_device"] in ("cpu",) or got["default_device"].startswith("cuda")


@needs_program
def test_exit_codes_and_stderr_pass_through():
    # docs/errors.md: 64 for a usage error, with the unknown command named.
    r = _script("nosuch")
    assert r.returncode == 64
    assert "unknown command 'nosuch'" in r.stderr
    # A graph file that does not read: exit 2 from run (the file exists, so it is not a usage error).
    r = _script("run", str(ROOT / "pyproject.toml"), "--no-check")
    assert r.returncode == 2, (r.returncode, r.stderr)


def test_a_missing_program_is_exit_127_naming_the_file():
    r = _script("info", prelude="import pathlib, dnngraph._cli as c; c.PROGRAM = pathlib.Path('/nonexistent/dnngraph')")
    assert r.returncode == 127
    assert "/nonexistent/dnngraph is not in this installation" in r.stderr


def test_pyproject_declares_the_console_script():
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)
    assert project["project"]["scripts"]["dnngraph"] == "dnngraph._cli:main"
    # The wheel builds the program and installs the package's component only.
    skb = project["tool"]["scikit-build"]
    assert skb["cmake"]["define"]["DNNGRAPH_BUILD_TOOLS"] == "ON"
    assert skb["install"]["components"] == ["python"]
    assert "build-dir" not in skb, "a build-dir writes the build into the source tree"


def test_the_stubs_and_marker_are_beside_the_module():
    package = pathlib.Path(dnngraph.__file__).resolve().parent
    stub = (package / "_dnngraph.pyi").read_text()
    assert (package / "py.typed").is_file()
    # The shape stub_fixups.py gives it: the error class declared here, the alias for pygraph's annotations.
    assert "class GraphNotSupportedError(RuntimeError):" in stub
    assert "from dnngraph import GraphNotSupportedError" not in stub
    assert "def tensor_like(self, input: object, name: str = '') -> _tensor:" in stub
    assert "__version__: str" in stub


# ---- `dnngraph run MODEL.onnx`: handed to dnngraph.onnx (dnngraph._run_onnx)

def test_only_run_with_an_onnx_path_is_handed_to_dnngraph_onnx():
    from dnngraph._run_onnx import onnx_model_of
    assert onnx_model_of(["run", "m.onnx"]) == "m.onnx"
    assert onnx_model_of(["--log-level", "3", "run", "--seed", "2", "--iters", "1", "m.onnx", "--no-check"]) == "m.onnx"
    assert onnx_model_of(["--log-level=3", "run", "m.onnx"]) == "m.onnx"
    assert onnx_model_of(["run", "graph.json"]) is None
    assert onnx_model_of(["tune", "m.onnx"]) is None
    assert onnx_model_of(["info", "--json"]) is None
    assert onnx_model_of([]) is None


@pytest.fixture(scope="module")
def mlp_onnx(tmp_path_factory):
    pytest.importorskip("onnx")
    import numpy as np
    import onnx
    from onnx_models import mlp
    path = tmp_path_factory.mktemp("onnx") / "mlp.onnx"
    onnx.save(mlp(np.random.default_rng(0), n=4, sizes=(16, 32, 32, 8)), str(path))
    return str(path)


def test_run_onnx_times_the_model_and_checks_it_against_onnxruntime(mlp_onnx):
    r = _script("run", mlp_onnx, "--iters", "2")
    assert r.returncode == 0, r.stderr
    assert "device: cpu" in r.stdout and "over 2 runs" in r.stdout
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        assert "skipped (pip install onnxruntime)" in r.stdout
    else:
        assert "check against onnxruntime (cpu):" in r.stdout and r.stdout.rstrip().endswith("PASS")


def test_run_onnx_exits_1_when_an_output_is_beyond_the_tolerance(mlp_onnx):
    pytest.importorskip("onnxruntime")
    # rtol 0: any difference from onnxruntime's float rounding is a mismatch (the MLP's softmax has some).
    r = _script("run", mlp_onnx, "--iters", "1", "--rtol", "0")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "MISMATCH" in r.stdout and r.stdout.rstrip().endswith("FAIL")


def test_run_onnx_errors_have_the_clis_exit_codes(mlp_onnx, tmp_path):
    for args, code, message in [
        (["run", mlp_onnx, "--engines", "ref"], 64, "--engines is for graph JSON files"),
        (["run", mlp_onnx, "--iters", "0"], 64, "--iters 0: at least 1"),
        (["run", mlp_onnx, "--input-shape", "x"], 64, "--input-shape 'x' is not NAME=D0,D1,..."),
        (["run", str(tmp_path / "missing.onnx")], 64, "file does not exist"),
        (["run", mlp_onnx, "--device", "tpu"], 64, "--device tpu: cpu, cuda or cuda:N"),
    ]:
        r = _script(*args)
        assert r.returncode == code and message in r.stderr, (args, r.returncode, r.stderr)
    not_onnx = tmp_path / "not.onnx"
    not_onnx.write_bytes(b"these bytes are no ONNX model")
    r = _script("run", str(not_onnx))
    assert r.returncode == 2 and f"error: run: {not_onnx}:" in r.stderr, r.stderr
