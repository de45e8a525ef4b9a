#!/usr/bin/env bash
# The four Debian packages from this tree, with Debian's own tools (debian/; dpkg-buildpackage -b -us -uc):
# libvkgmm0, libvkgmm-dev, vkgmm and python3-vkgmm (docs/packaging.md). The .debs, the .changes file and
# lintian's report land in the folder given (default build-deb/); a lintian error or warning fails it.
# Run as root: it installs debhelper, dh-python, lintian and the build dependencies where missing.
# usage: scripts/build_debs.sh [out folder]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "build_debs.sh installs its build dependencies with apt-get: run it as root"; exit 1; }
out=$(mkdir -p "${1:-$root/build-deb}" && cd "${1:-$root/build-deb}" && pwd)
export DEBIAN_FRONTEND=noninteractive
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-debs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The tree's own dependencies and trixie's shader compiler (scripts/install_deps.sh), then the packaging
# tools and whatever else debian/control asks for.
"$root/scripts/install_deps.sh"
tools=()
for p in debhelper dh-python lintian fakeroot dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || tools+=("$p")
done
if [ ${#tools[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi
(cd "$root" && dpkg-checkbuilddeps 2>/dev/null) || apt-get build-dep -y -qq "$root" >/dev/null
version=$(/usr/bin/python3 "$root/scripts/project_version.py")

# The shaders compiled as the tree's own build compiles them, with trixie's glslc (fetched by
# install_deps.sh): without it the packaged library would lack the KHR matrix builds.
compilers=${VKGMM_GPU_COMPILERS:-$root/build/gpu-compilers}
[ -x "$compilers/wrap/glslc" ] ||
  { echo "no glslc in $compilers (scripts/gpu_compilers.sh fetch): the packages would lack the KHR matrix builds"; exit 1; }
export VKGMM_GPU_COMPILERS=$compilers

# A copy of the tree (what git tracks or would add, as it is now), so that dpkg-buildpackage's files
# and its ../*.deb stay out of the clone.
src=$work/vkgmm-$version
mkdir "$src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
   tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$src"
start=$SECONDS
(cd "$src" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$(nproc)" \
   dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1 || { tail -60 "$work/build.log"; exit 1; }
echo "dpkg-buildpackage: $((SECONDS - start)) s"
changes=$(ls "$work"/vkgmm_"$version"_*.changes)
for p in libvkgmm0 libvkgmm-dev vkgmm python3-vkgmm; do
  rm -f "$out/${p}_"*.deb
  deb=$(ls "$work/${p}_${version}_"*.deb)
  cp "$deb" "$out/"
  echo "$out/$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
done
rm -f "$out"/vkgmm_*.changes "$out"/vkgmm_*.buildinfo
cp "$changes" "$work"/vkgmm_*.buildinfo "$out/"
lintian --fail-on error,warning --tag-display-limit 0 "$changes" >"$out/lintian.txt" 2>&1 ||
  { cat "$out/lintian.txt"; echo "lintian found errors or warnings"; exit 1; }
echo "lintian: $(grep -c '^[EW]:' "$out/lintian.txt" || true) errors and warnings," \
     "$(grep -c '^[IP]:' "$out/lintian.txt" || true) notes ($out/lintian.txt)"
