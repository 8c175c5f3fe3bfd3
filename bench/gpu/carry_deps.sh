#!/usr/bin/env bash
# Collects, from this machine's Debian packages, what the build needs and a bare GPU machine may
# lack (it reaches no package registry): header-only libraries with their CMake configs
# (nlohmann-json, CLI11), the sources of googletest and xxHash (built there by bench/gpu.sh with that
# machine's compiler), and pkgconf. Then on the GPU machine: DNNGRAPH_DEPS=<dir> bash bench/gpu.sh
#
# usage: bench/gpu/carry_deps.sh <dir>
set -euo pipefail
dest=${1:?usage: carry_deps.sh <dir>}
rm -rf "$dest"
mkdir -p "$dest/include" "$dest/share/cmake" "$dest/src" "$dest/bin" "$dest/lib"
cp -r /usr/include/nlohmann /usr/include/CLI "$dest/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$dest/share/cmake/"
cp -r /usr/src/googletest "$dest/src/googletest"
mkdir -p "$dest/src/xxhash"
cp /usr/include/xxhash.h /usr/include/xxh3.h "$dest/src/xxhash/"
# pkgconf and its library (CMake's pkg_check_modules needs a pkg-config program).
cp "$(readlink -f /usr/bin/pkgconf)" "$dest/bin/pkg-config"
cp "$(ldd /usr/bin/pkgconf | awk '/libpkgconf/ {print $3}')" "$dest/lib/"
du -sh "$dest"
