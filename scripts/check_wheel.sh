#!/usr/bin/env bash
# `pip install .` as a user runs it, from a clean clone of the committed tree (HEAD: commit first),
# into a fresh virtual environment; then checks what the wheel promises (docs/python.md):
#   - nothing is written into the source tree (no build-wheel/: git status --ignored is clean)
#   - the `dnngraph` console script runs the CLI: `info --json` is JSON, exit codes pass through
#   - the package imports from outside the source tree, with _dnngraph.pyi, py.typed, bin/dnngraph
#   - only the Python package is installed (no C++ headers, archive or CMake package in the venv)
#   - mypy on the clone's examples/python passes against the *installed* stubs
# A first run builds the whole library (minutes on 2 cores); the CMake build folder is kept in
# $DNNGRAPH_WHEEL_CHECK_DIR/build (default ${TMPDIR:-/tmp}/dnngraph-wheel-check), outside the
# clone, so later runs are incremental through ccache. DNNGRAPH_WHEEL_ISOLATED=1 lets pip make its
# isolated build environment (downloads scikit-build-core and nanobind) instead of using this one's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${DNNGRAPH_WHEEL_CHECK_DIR:-${TMPDIR:-/tmp}/dnngraph-wheel-check}
python=${PYTHON:-python3}

fail() { echo "check_wheel: FAIL: $*" >&2; exit 1; }

rm -rf "$work/src" "$work/venv" "$work/mypy-cache"
mkdir -p "$work"
git clone -q --no-hardlinks "$root" "$work/src"
echo "check_wheel: clean clone of $(git -C "$work/src" log -1 --format='%h %s' | cut -c1-72)"
"$python" -m venv --system-site-packages "$work/venv"
py=$work/venv/bin/python

isolation=--no-build-isolation
[ "${DNNGRAPH_WHEEL_ISOLATED:-0}" = 1 ] && isolation=
start=$(date +%s)
(cd "$work/src" && SKBUILD_BUILD_DIR="$work/build" "$py" -m pip install -q $isolation .)
echo "check_wheel: pip install . took $(( $(date +%s) - start )) s"

leftovers=$(git -C "$work/src" status --porcelain --ignored)
[ -z "$leftovers" ] || fail "pip install . wrote into the source tree:"$'\n'"$leftovers"

cd "$work"   # away from the clone: the import must find the installed package
dnngraph=$work/venv/bin/dnngraph
[ -x "$dnngraph" ] || fail "no dnngraph console script in $work/venv/bin"
"$dnngraph" info --json | "$py" -c "import json, sys; d = json.load(sys.stdin); assert 'default_device' in d, d" \
  || fail "dnngraph info --json did not print the JSON object of docs/cli.md"
set +e
"$dnngraph" nosuch 2>/dev/null
rc=$?
set -e
[ "$rc" = 64 ] || fail "dnngraph nosuch exited $rc, not 64 (docs/errors.md)"

"$py" - "$work/venv" <<'EOF' || fail "the installed package is not what the wheel promises"
import pathlib, sys
import dnngraph
venv = pathlib.Path(sys.argv[1]).resolve()
pkg = pathlib.Path(dnngraph.__file__).resolve().parent
assert venv in pkg.parents, f"dnngraph imported from {pkg}, not from the venv"
for f in ("_dnngraph.pyi", "py.typed", "bin/dnngraph"):
    assert (pkg / f).is_file(), f"{f} is missing from {pkg}"
stray = [p for pattern in ("**/include/dnngraph", "**/cmake/dnngraph", "**/libdnngraph.a", "**/pkgconfig/dnngraph.pc")
         for p in venv.glob(pattern)]
assert not stray, f"C++ install files in the wheel: {stray}"
print(f"check_wheel: installed {pkg} (dnngraph {dnngraph.__version__}) with stubs, py.typed and bin/dnngraph")
EOF

# The user's view of the stubs: no mypy_path, the package found in the venv's site-packages.
printf '[mypy]\n' > "$work/mypy.ini"   # none of the repository's settings (pyproject.toml points at build/)
(cd "$work/src/examples/python" && "$py" -m mypy --config-file "$work/mypy.ini" --check-untyped-defs \
   --ignore-missing-imports --cache-dir "$work/mypy-cache" .) || fail "mypy on examples/python with the installed stubs"
echo "check_wheel: OK"
