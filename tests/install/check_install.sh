#!/usr/bin/env bash
# Installs the build into a fresh prefix, then builds and runs a downstream project against it
# twice: through CMake (find_package(dnngraph CONFIG)) and through pkg-config.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/include/dnngraph/dnngraph.hpp"
test -f "$tmp/prefix/lib/cmake/dnngraph/dnngraphConfig.cmake"
test -x "$tmp/prefix/bin/dnngraph"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" ||
  { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer"
# pkg-config, as a Makefile user would.
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" c++ "$src/tests/install/consumer/main.cpp" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs dnngraph) -o "$tmp/consumer_pc"
"$tmp/consumer_pc"
"$tmp/prefix/bin/dnngraph" info >/dev/null
echo "install: ok"
