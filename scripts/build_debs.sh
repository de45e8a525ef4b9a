#!/usr/bin/env bash
# The four Debian packages from this tree, with Debian's own tools (debian/; dpkg-buildpackage -b -us -uc):
# libvkgmm0 (the shared library, its SPIR-V embedded), libvkgmm-dev (headers, static library, CMake and
# pkg-config files), vkgmm (the CLI) and python3-vkgmm. The .debs, the .changes file and lintian's
# report land in the folder given (default build-deb/); lintian's errors fail the build.
# Run as root: it installs debhelper, dh-python, lintian and the build dependencies where missing.
# About 9 minutes on 2 cores. scripts/check_debs.sh installs and tests what it builds.
# usage: scripts/build_debs.sh [out folder]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/build-deb}" && cd "${1:-$root/build-deb}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "build_debs.sh installs its build dependencies with apt-get: run it as root"; exit 1; }
export DEBIAN_FRONTEND=noninteractive
version=$(/usr/bin/python3 "$root/scripts/project_version.py")
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The tree's own dependencies and trixie's shader compiler (scripts/install_deps.sh), then the packaging
# tools and whatever else debian/control asks for.
"$root/scripts/install_deps.sh"
tools=()
for p in debhelper dh-python lintian fakeroot dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || tools+=("$p")
done
[ ${#tools[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
(cd "$root" && dpkg-checkbuilddeps 2>/dev/null) || apt-get build-dep -y -qq "$root" >/dev/null

# A copy of the tree (what git tracks or would add, as it is now), so that dpkg-buildpackage's files
# and its ../*.deb stay out of the clone.
src=$work/vkgmm-$version
mkdir "$src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
   tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$src"
# The shaders compiled as the tree's own build compiles them: with trixie's glslc where install_deps.sh
# fetched it, so that the packaged library has the KHR matrix builds too.
[ -x "$root/build/gpu-compilers/wrap/glslc" ] && export VKGMM_GPU_COMPILERS=$root/build/gpu-compilers
start=$SECONDS
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 ||
  { tail -60 "$work/build.log"; exit 1; }
echo "dpkg-buildpackage: $((SECONDS - start)) s"
changes=$(ls "$work"/vkgmm_"$version"_*.changes)
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
for p in libvkgmm0 libvkgmm-dev vkgmm python3-vkgmm; do
  deb=$(ls "$work/${p}_${version}_"*.deb)
  cp "$deb" "$out/"
  echo "$out/$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
done
cp "$changes" "$work"/*.buildinfo "$out/"
lintian --fail-on error --tag-display-limit 0 "$changes" >"$out/lintian.txt" 2>&1 ||
  { cat "$out/lintian.txt"; echo "lintian found errors"; exit 1; }
echo "lintian: $(grep -c '^E:' "$out/lintian.txt" || true) errors, $(grep -c '^W:' "$out/lintian.txt" || true) warnings," \
     "$(grep -c '^I:' "$out/lintian.txt" || true) notes ($out/lintian.txt)"
