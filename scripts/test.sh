#!/usr/bin/env bash
# Builds dnngraph and runs every test: C++ (CTest), Python (pytest), and bounded fuzz runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== include layers"
python3 scripts/check_layers.py

echo "== C++ tests (ctest)"
ctest --test-dir build --output-on-failure -j "$(nproc)"

if ls build/python/dnngraph/_dnngraph*.so >/dev/null 2>&1 && [ -d tests/python ]; then
  echo "== Python tests (pytest)"
  PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q tests/python
fi

if ls build/python/dnngraph/_dnngraph.pyi >/dev/null 2>&1; then
  echo "== type check (mypy on examples/python against the stubs; config in pyproject.toml)"
  python3 -m mypy
fi

if [ -f scripts/fuzz.sh ]; then
  echo "== fuzz (bounded)"
  bash scripts/fuzz.sh
fi
