#!/usr/bin/env bash
# The installed tree as a consumer sees it: `cmake --install` into a scratch prefix, move the tree
# elsewhere (it must be relocatable), check its files and SONAME, then build examples/app_record
# against it three ways — find_package (shared), find_package (static), pkg-config (a Makefile) — each
# as strict C++17 (-std=c++17: the public headers must not need more), and run each with the validation
# layer on. Also: only the public headers are installed, and the installed library exports only the
# public API (check_exports.py).
# usage: check_install.sh <cmake> <build dir> <source dir> <install libdir, e.g. lib>
set -euo pipefail
cmake=$1 build=$2 src=$3 libdir=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
export VKGMM_VALIDATE=1 LP_NUM_THREADS=${LP_NUM_THREADS:-2}
step() { echo "--- $*"; }

step "install into a scratch prefix, then move it"
"$cmake" --install "$build" --prefix "$work/staged" >"$work/install.log"
mv "$work/staged" "$work/prefix"
prefix=$work/prefix

step "installed files"
for f in include/vkgmm/vkgmm.hpp include/vkgmm/vkgmm.h include/vkgmm/requirements.hpp \
         "$libdir/libvkgmm.a" "$libdir/libvkgmm.so" "$libdir/libvkgmm.so.0" bin/vkgmm \
         "$libdir/cmake/vkgmm/vkgmmConfig.cmake" "$libdir/cmake/vkgmm/vkgmmConfigVersion.cmake" \
         "$libdir/pkgconfig/vkgmm.pc"; do
  [ -e "$prefix/$f" ] || { echo "missing: $f"; exit 1; }
done
# Exactly the headers of include/vkgmm/: the internal ones (host/internal_include/, reference/) stay in the tree.
installed=$(cd "$prefix/include/vkgmm" && ls | sort | tr '\n' ' ')
public=$(cd "$src/include/vkgmm" && ls | sort | tr '\n' ' ')
[ "$installed" = "$public" ] || { echo "installed headers: $installed"; echo "public headers:    $public"; exit 1; }
python3 "$src/tests/install/check_exports.py" "$prefix/$libdir/libvkgmm.so" "$prefix/include"
readelf -d "$prefix/$libdir/libvkgmm.so" | grep -q 'SONAME.*\[libvkgmm\.so\.0\]' \
  || { echo "SONAME is not libvkgmm.so.0"; readelf -d "$prefix/$libdir/libvkgmm.so" | grep SONAME; exit 1; }
if grep -q "$work/staged" "$prefix/$libdir/pkgconfig/vkgmm.pc" "$prefix/$libdir/cmake/vkgmm/"*.cmake; then
  echo "the installed package files name the install prefix: not relocatable"; exit 1
fi
"$prefix/bin/vkgmm" --help >/dev/null

app=$src/examples/app_record
for variant in shared static; do
  step "find_package(vkgmm), $variant"
  static=OFF; [ "$variant" = static ] && static=ON
  "$cmake" -S "$app" -B "$work/cmake-$variant" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DVKGMM_EXAMPLE_STATIC=$static -DCMAKE_CXX_STANDARD=17 -DCMAKE_CXX_STANDARD_REQUIRED=ON \
    -DCMAKE_CXX_EXTENSIONS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    >"$work/configure-$variant.log" || { cat "$work/configure-$variant.log"; exit 1; }
  # The imported target must not raise the standard (a cxx_std_20 usage requirement would).
  cc_json=$work/cmake-$variant/compile_commands.json
  if ! grep -q -- '-std=c++17' "$cc_json" || grep -q -- '-std=\(c\|gnu\)++2' "$cc_json"; then
    echo "not compiled as C++17:"; grep '"command"' "$cc_json"; exit 1
  fi
  "$cmake" --build "$work/cmake-$variant" -j2 >"$work/build-$variant.log" || { cat "$work/build-$variant.log"; exit 1; }
  if [ "$variant" = static ] && readelf -d "$work/cmake-$variant/vkgmm_example_app" | grep -q libvkgmm; then
    echo "the static build depends on libvkgmm.so"; exit 1
  fi
  "$work/cmake-$variant/vkgmm_example_app"
done

step "pkg-config"
mkdir "$work/pc"
PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" make -s -C "$work/pc" -f "$app/Makefile" CXXSTD="-std=c++17 -pedantic" \
  >"$work/pc.log" 2>&1 \
  || { cat "$work/pc.log"; exit 1; }
"$work/pc/vkgmm_example_app"
echo "install consumer: all good"
