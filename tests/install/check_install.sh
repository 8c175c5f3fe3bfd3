#!/usr/bin/env bash
# Installs the build into a fresh prefix, then builds and runs a downstream project against it:
# through CMake (find_package(dnngraph CONFIG)) against the default target, the static and (when
# built) the shared library, and through pkg-config. The shared library must carry its SONAME and
# export the public API (include/dnngraph) only.
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
"$tmp/consumer/consumer_static"
needed() { readelf -d "$1" | grep -c 'NEEDED.*libdnngraph' || true; }
[ "$(needed "$tmp/consumer/consumer_static")" = 0 ] || { echo "consumer_static needs libdnngraph.so"; exit 1; }
if [ -f "$tmp/prefix/lib/libdnngraph.so" ]; then
  "$tmp/consumer/consumer_shared"
  [ "$(needed "$tmp/consumer/consumer_shared")" = 1 ] || { echo "consumer_shared does not need libdnngraph.so"; exit 1; }
  [ "$(needed "$tmp/consumer/consumer")" = 1 ] || { echo "dnngraph::dnngraph is not the shared library"; exit 1; }
  readelf -d "$tmp/prefix/lib/libdnngraph.so" | grep -q 'SONAME.*\[libdnngraph.so.0.1\]' ||
    { echo "libdnngraph.so: SONAME is not libdnngraph.so.0.1"; exit 1; }
  # Every exported symbol is a member of a public class (dnngraph::Graph::...) or a public free
  # function (dnngraph::to_string(...)); internal namespaces are lowercase, pImpls end in Impl.
  leaks=$(nm -D --defined-only -C "$tmp/prefix/lib/libdnngraph.so" | cut -d' ' -f3- |
          grep -Ev '^dnngraph::([A-Z][A-Za-z]*::|[a-z_]+\()' | grep -v 'Impl::' || true)
  leaks+=$(nm -D --defined-only -C "$tmp/prefix/lib/libdnngraph.so" | cut -d' ' -f3- | grep 'Impl::' || true)
  [ -z "$leaks" ] || { echo "libdnngraph.so exports symbols outside the public API:"; echo "$leaks" | head -20; exit 1; }
  # dnngraph_USE_STATIC makes the default target the static library.
  cmake -S "$src/tests/install/consumer" -B "$tmp/consumer_s" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -Ddnngraph_USE_STATIC=ON >"$tmp/configure_s.log" || { cat "$tmp/configure_s.log"; exit 1; }
  cmake --build "$tmp/consumer_s" --target consumer >"$tmp/build_s.log" || { cat "$tmp/build_s.log"; exit 1; }
  [ "$(needed "$tmp/consumer_s/consumer")" = 0 ] || { echo "dnngraph_USE_STATIC: still the shared library"; exit 1; }
fi
# pkg-config, as a Makefile user would.
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
c++ "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags --libs dnngraph) -o "$tmp/consumer_pc"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/consumer_pc"
# --static: against libdnngraph.a, with its needs from Libs.private.
c++ "$src/tests/install/consumer/main.cpp" $(pkg-config --cflags dnngraph) "$tmp/prefix/lib/libdnngraph.a" \
  $(pkg-config --static --libs-only-l dnngraph | sed 's/-ldnngraph//') -o "$tmp/consumer_pc_static"
"$tmp/consumer_pc_static"
"$tmp/prefix/bin/dnngraph" info >/dev/null
echo "install: ok"
