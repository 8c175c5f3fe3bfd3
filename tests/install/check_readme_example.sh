#!/usr/bin/env bash
# The README's C++ example, extracted as written, compiles with warnings as errors against the
# library and runs.   check_readme_example.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk '/^```cpp$/ {on = 1; next} on && /^```$/ {exit} on {print}' "$src/README.md" >"$tmp/example.cpp"
test -s "$tmp/example.cpp"
c++ -std=c++20 -Wall -Wextra -Werror -I"$src/include" "$tmp/example.cpp" "$build/libdnngraph.a" \
  $(pkg-config --libs libxxhash) -ldl -pthread -o "$tmp/example"
"$tmp/example"
