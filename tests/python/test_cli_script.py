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
