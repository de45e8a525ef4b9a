#!/usr/bin/env bash
# The Debian packages as an engine author gets them, by the README's lines: scripts/build_debs.sh builds
# the four .debs, then they are installed on this machine with apt-get and used from outside the tree
# (docs/packaging.md says what is checked, and when to run this). Packages this script installed are
# purged at the end. Run as root (apt-get).
# usage: scripts/check_debs.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check_debs.sh installs packages with apt-get: run it as root"; exit 1; }
packages=(libvkgmm0 libvkgmm-dev vkgmm python3-vkgmm)
for p in "${packages[@]}"; do
  ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "$p is installed already: check_debs.sh installs and purges its own; remove it first"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-debs-check.XXXXXX")
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then apt-get purge -y -qq "${packages[@]}" >/dev/null || echo "purging failed"; fi
  rm -rf "$work"
}
trap cleanup EXIT
step() { echo "--- $*"; }
export DEBIAN_FRONTEND=noninteractive

step "scripts/build_debs.sh"
"$root/scripts/build_debs.sh" "$work/debs"
version=$(/usr/bin/python3 "$root/scripts/project_version.py")
debs=()
for p in "${packages[@]}"; do debs+=("$(ls "$work/debs/${p}_${version}_"*.deb)"); done

step "the shared library: SONAME, symbols file, exports"
dpkg-deb -x "${debs[0]}" "$work/lib0"
so=$(ls "$work"/lib0/usr/lib/*/libvkgmm.so.0)
readelf -d "$so" | grep 'SONAME.*\[libvkgmm\.so\.0\]' >/dev/null || { echo "SONAME is not libvkgmm.so.0"; exit 1; }
dpkg-deb -I "${debs[0]}" symbols >"$work/symbols" 2>&1 || true
grep -q '^libvkgmm.so.0 libvkgmm0 ' "$work/symbols" || { echo "libvkgmm0 has no symbols file"; exit 1; }
python3 "$root/tests/install/check_exports.py" "$so" "$root/include"

step "apt-get install ./*.deb"
installed=1
apt-get install -y -qq "${debs[@]}" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
for p in "${packages[@]}"; do
  [ "$(dpkg-query -W -f='${Version}' "$p")" = "$version" ] || { echo "$p is not at $version"; exit 1; }
done

mkdir "$work/consumer"
cd "$work/consumer"
export VKGMM_VALIDATE=1 LP_NUM_THREADS=${LP_NUM_THREADS:-2}
step "vkgmm --version, vkgmm info"
[ "$(command -v vkgmm)" = /usr/bin/vkgmm ] || { echo "vkgmm is not /usr/bin/vkgmm"; exit 1; }
[ "$(vkgmm --version)" = "vkgmm $version" ] || { vkgmm --version; exit 1; }
vkgmm info >"$work/info.log" || { cat "$work/info.log"; exit 1; }
head -3 "$work/info.log"
# The man page describes every command `vkgmm --help` lists (but help itself).
for c in $(vkgmm --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
  [ "$c" = help ] || zgrep -q "^\.B $c\b" /usr/share/man/man1/vkgmm.1.gz || { echo "vkgmm(1) lacks $c"; exit 1; }
done

step "C through pkg-config: tests/test_c_api.c"
[ "$(pkg-config --modversion vkgmm)" = "$version" ] || { pkg-config --modversion vkgmm; exit 1; }
# shellcheck disable=SC2046  # pkg-config's flags are words
cc -std=c11 -Wall -Wextra -Wno-missing-field-initializers -O2 -DVKGMM_PROJECT_VERSION="\"$version\"" -o c_api "$root/tests/test_c_api.c" \
  $(pkg-config --cflags --libs vkgmm) -lm
ldd ./c_api | grep -E '=> (/usr)?/lib/[^ ]*/libvkgmm\.so\.0 ' >/dev/null || { ldd ./c_api; exit 1; }
./c_api

step "C++ through find_package(vkgmm): examples/app_record"
{ cmake -S "$root/examples/app_record" -B cxx -DCMAKE_BUILD_TYPE=Release &&
  cmake --build cxx -j"$(nproc)"; } >"$work/cxx.log" 2>&1 || { cat "$work/cxx.log"; exit 1; }
ldd cxx/vkgmm_example_app | grep -E '=> (/usr)?/lib/[^ ]*/libvkgmm\.so\.0 ' >/dev/null || { ldd cxx/vkgmm_example_app; exit 1; }
cxx/vkgmm_example_app

step "python3-vkgmm: the README's example"
/usr/bin/python3 "$root/scripts/check_python_package.py" "$root" /usr/lib/python3/dist-packages
echo "debian packages: all good"
