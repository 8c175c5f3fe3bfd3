#!/usr/bin/env bash
# The Python module built on the CPU machine for another interpreter, so a GPU call runs Python
# work (NVIDIA's frontend suite through bench/gpu/frontend_suite.sh, bench/networks_torch.py)
# without building there: the GPU machines run Python 3.12, and pyenv on the CPU machine has
# 3.12 too. nanobind comes from the default python3's packages (it is built from source).
#
#   bash bench/gpu/build_python.sh [PYTHON] [BUILD_DIR]
#     PYTHON     default: pyenv's python3.12 (/root/.pyenv/versions/3.12.*/bin/python3.12)
#     BUILD_DIR  default: build-py312
#
# Then carry BUILD_DIR/python (~19 MB: the package, its _dnngraph module and bin/dnngraph) and use
# it as PYTHONPATH there (2026-12-07: 224 steps, ~6 min on 2 cores with ccache warm from build/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
py=${1:-$(ls -d /root/.pyenv/versions/3.12.*/bin/python3.12 2>/dev/null | tail -1)}
out=${2:-$root/build-py312}
[ -x "$py" ] || { echo "build_python.sh: no interpreter at '$py'" >&2; exit 1; }
nb=$(python3 -m nanobind --cmake_dir) || { echo "build_python.sh: python3 -m nanobind failed (pip install nanobind)" >&2; exit 1; }
cmake -S "$root" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDNNGRAPH_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" \
  -Dnanobind_ROOT="$nb" >/dev/null
cmake --build "$out" -j "$(nproc)" --target dnngraph_python
PYTHONPATH="$out/python" "$py" -c "import dnngraph, sys; print('dnngraph for Python', sys.version.split()[0], 'in', '$out/python')"
