#!/usr/bin/env bash
# The plugin SDK end to end, as a vendor meets it (CI runs it from scripts/test.sh):
# install Kiln from a build folder into a temporary prefix and move that prefix (the
# install must be relocatable), build an application against it (CMake and pkg-config),
# build the installed copy of the plugin template (share/doc/kiln/examples/plugin-template)
# out of tree against the install only, certify it with the installed kiln-conformance,
# train a few steps with it through KILN_PLUGIN_PATH and KILN_BACKEND, and build and
# run the installed custom-op recipe (share/doc/kiln/examples/tutorial).
#
#   scripts/sdk-check.sh [build-folder]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-sdk-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n== sdk-check: %s (%ss)\n' "$1" "$SECONDS"; }

step "install into a temporary prefix, then move it"
cmake --install "$build" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/kiln"
prefix=$work/kiln
info=$(env -u KILN_PLUGIN_PATH -u KILN_BACKEND "$prefix/bin/kiln-info")
grep -qF "$prefix/lib/kiln/plugins/libkiln_cpu.so" <<<"$info" \
  || { echo "sdk-check: the moved install does not find its CPU plugin" >&2; echo "$info" >&2; exit 1; }

step "build an application against the install: CMake (Kiln::kiln) and pkg-config"
mkdir -p "$work/app"
cat > "$work/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(kiln_app LANGUAGES CXX)
find_package(Kiln CONFIG REQUIRED)
add_executable(demo demo.cpp)
target_link_libraries(demo PRIVATE Kiln::kiln)
CMAKE
cp examples/demo.cpp "$work/app/"
cmake -S "$work/app" -B "$work/app/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >/dev/null
cmake --build "$work/app/build" >/dev/null
demo=$(env -u KILN_PLUGIN_PATH -u KILN_BACKEND "$work/app/build/demo")
grep -q "Running on cpu:0" <<<"$demo" || { echo "sdk-check: the application failed" >&2; exit 1; }
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --exists kiln
# Plain c++ with nothing but pkg-config's flags: it compiles, links, and the program
# finds libkiln through the rpath kiln.pc gives.
# shellcheck disable=SC2046  # word splitting of the flags is intended
c++ -o "$work/demo-pc" examples/demo.cpp \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln)
env -u KILN_PLUGIN_PATH -u KILN_BACKEND "$work/demo-pc" | grep -q "Running on cpu:0" ||
  { echo "sdk-check: the pkg-config build failed" >&2; exit 1; }

step "build the installed plugin template against the install only"
cmake -S "$prefix/share/doc/kiln/examples/plugin-template" -B "$work/template" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_CXX_FLAGS="-Werror" >/dev/null
cmake --build "$work/template"
plugin=$work/template/libkiln_reference.so

step "certify it"
"$prefix/bin/kiln-conformance" "$plugin"

step "train with it"
KILN_PLUGIN_PATH="$work/template" KILN_BACKEND=reference \
  "$prefix/bin/kiln-train" --model mlp --epochs 1 --limit-batches 20 --batch-size 32

step "build and run the installed custom-op recipe (tutorial 8) against the install only"
cmake -S "$prefix/share/doc/kiln/examples/tutorial" -B "$work/custom_op" -G Ninja \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_CXX_FLAGS="-Werror" >/dev/null
cmake --build "$work/custom_op"
(cd "$work/custom_op" && env -u KILN_PLUGIN_PATH -u KILN_BACKEND ctest --output-on-failure)

step "done"
