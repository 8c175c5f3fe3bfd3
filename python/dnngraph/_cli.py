"""The ``dnngraph`` console script of the wheel: it runs the C++ command-line program shipped inside
the package (dnngraph/bin/dnngraph, docs/cli.md) with the same arguments, so ``pip install .`` gives
the same ``dnngraph info``, ``run``, ``tune`` and ``tour`` as a CMake build, and the same exit codes
(docs/errors.md). The process is replaced (os.execv), not wrapped: signals, the terminal (tune's
progress bar) and the exit status are the program's own. ``run MODEL.onnx`` goes to dnngraph.onnx
instead (dnngraph._run_onnx), with the same steps and exit codes."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn, Sequence

from . import _run_onnx

# Where the wheel puts the program (python/CMakeLists.txt installs it there).
PROGRAM = Path(__file__).resolve().parent / "bin" / "dnngraph"

# The exit code of a command that could not be run, as a shell reports one it cannot find.
_NOT_FOUND = 127


def program() -> Path:
    """The path of the dnngraph command-line program inside this package."""
    return PROGRAM


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the dnngraph program with `argv` (sys.argv[1:] when None); never returns.

    Exits with 127 and a message naming the missing file when this installation has no program
    (a build made with DNNGRAPH_BUILD_TOOLS=OFF)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if _run_onnx.onnx_model_of(args) is not None:  # `run MODEL.onnx`: the C++ program reads graph JSON only
        sys.exit(_run_onnx.main(args))
    exe = program()
    if not os.access(exe, os.X_OK):
        sys.stderr.write(f"dnngraph: the command-line program {exe} is not in this installation "
                         "(the package was built without DNNGRAPH_BUILD_TOOLS)\n")
        sys.exit(_NOT_FOUND)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, [str(exe), *args])


if __name__ == "__main__":
    main()
