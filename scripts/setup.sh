#!/usr/bin/env bash
# Installs what is missing (Debian packages, PyPI packages), then configures and builds dnngraph
# into build/. Safe to run again: it installs nothing that is already there.
#   bash scripts/setup.sh            # install + build
#   bash scripts/setup.sh --deps     # install only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache          # toolchain
  nlohmann-json3-dev libcli11-dev libxxhash-dev    # JSON, argument parsing, hashing
  googletest libgtest-dev                          # C++ tests
  clang libclang-rt-14-dev                         # libFuzzer targets (scripts/fuzz.sh)
  python3 python3-pip python3-venv                 # the Python package and its tests
)
# Benchmarks only (bench/): peers for the CPU engines.
APT_BENCH_PACKAGES=(libopenblas-dev libdnnl-dev)

install_apt() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  # python3/pip may come from elsewhere (pyenv); only ask apt when no usable one is on PATH.
  if command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
    missing=("${missing[@]/python3}"); missing=("${missing[@]/python3-pip}"); missing=("${missing[@]/python3-venv}")
  fi
  local todo=()
  for p in "${missing[@]}"; do [ -n "$p" ] && todo+=("$p"); done
  [ ${#todo[@]} -eq 0 ] && return 0
  echo "setup: installing ${todo[*]}"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${todo[@]}" >/dev/null
}

install_pip() {
  local req=scripts/python-requirements.txt
  [ -f "$req" ] || return 0
  if ! python3 -c "import nanobind, scikit_build_core, numpy, pytest, ml_dtypes, onnx, onnxruntime, mypy" >/dev/null 2>&1; then
    echo "setup: installing Python packages from $req"
    python3 -m pip install -q -r "$req" || python3 -m pip install -q --break-system-packages -r "$req"
  fi
}

build() {
  local python_flag=OFF
  python3 -c "import nanobind" >/dev/null 2>&1 && python_flag=ON
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDNNGRAPH_BUILD_PYTHON=$python_flag >/dev/null
  cmake --build build -j "$(nproc)"
}

install_apt "${APT_PACKAGES[@]}"
[ "${DNNGRAPH_BENCH_DEPS:-0}" = 1 ] && install_apt "${APT_BENCH_PACKAGES[@]}"
install_pip
[ "${1:-}" = "--deps" ] && exit 0
build
