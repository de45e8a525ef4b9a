#!/usr/bin/env bash
# Fetches ggml's prebuilt Vulkan libraries and matching headers from the npm registry and builds the
# ggml peer (bench/peers/ggml_mul_mat_id.cpp) against them. Needs npm, git, g++ and the network; never
# run by CMake, ctest or CI (the registry may be unreachable there).
#
# usage: bench/peers/fetch_ggml.sh [DIR]      (default build/peers/ggml)
#
# - @node-llama-cpp/linux-x64-vulkan 3.22.1: libggml-base.so, libggml.vulkan.v0.5.0.so (libggml: the
#   backend registry) and libggml-vulkan.so (the Vulkan backend, a module loaded at run time), built on
#   Ubuntu 22.04 (glibc >= 2.34, GLIBCXX_3.4.30); they load libvulkan.so.1, which a bundle's lib/ has.
# - node-llama-cpp 3.22.1 ships llama.cpp's source as a git bundle (llama/gitRelease.bundle, ggml 0.25.1):
#   ggml/include is taken from it.
# DIR gets the program (ggml_mul_mat_id, RUNPATH $ORIGIN) and the three libraries side by side, plus
# DIR.tar.gz: the same folder packed (~15 MB) to carry to a GPU machine (scripts/gpu_session.sh).
# Downloads are kept in DIR.download/ and reused.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$root/build/peers/ggml}
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
dl=$dir.download
version=3.22.1
mkdir -p "$dl"

for pkg in @node-llama-cpp/linux-x64-vulkan node-llama-cpp; do
  tgz=$dl/$(echo "${pkg#@}" | tr / -)-$version.tgz
  if [ ! -s "$tgz" ]; then
    echo "fetch_ggml.sh: npm pack $pkg@$version" >&2
    (cd "$dl" && npm pack --silent "$pkg@$version" >/dev/null)
  fi
  [ -s "$tgz" ] || { echo "fetch_ggml.sh: $tgz was not fetched" >&2; exit 1; }
done

# The libraries (not the CPU backends nor llama: only the Vulkan backend is loaded).
libs=(libggml-base.so libggml.vulkan.v0.5.0.so libggml-vulkan.so)
tar -xzf "$dl/node-llama-cpp-linux-x64-vulkan-$version.tgz" -C "$dl" \
  "${libs[@]/#/package/bins/linux-x64-vulkan/}" package/LICENSE
for l in "${libs[@]}"; do cp "$dl/package/bins/linux-x64-vulkan/$l" "$dir/"; done
cp "$dl/package/LICENSE" "$dir/LICENSE.node-llama-cpp"

# The headers, from the source bundle of node-llama-cpp itself.
if [ ! -f "$dl/include/ggml.h" ]; then
  tar -xzf "$dl/node-llama-cpp-$version.tgz" -C "$dl" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
  rm -rf "$dl/src.git"
  git clone --quiet --bare "$dl/package/llama/gitRelease.bundle" "$dl/src.git"
  git -C "$dl/src.git" archive HEAD ggml/include ggml/CMakeLists.txt LICENSE | tar -x -C "$dl"
  mkdir -p "$dl/include" && cp "$dl"/ggml/include/*.h "$dl/include/"
  rm -rf "$dl/src.git"
fi
cp "$dl/LICENSE" "$dir/LICENSE.llama.cpp"
ggml_version=$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$dl/ggml/CMakeLists.txt" | paste -sd.)

echo "fetch_ggml.sh: building $dir/ggml_mul_mat_id (ggml $ggml_version)" >&2
nice g++ -std=c++17 -O2 -Wall -Wextra -I"$dl/include" -I"$root/bench" "$root/bench/peers/ggml_mul_mat_id.cpp" "$root/bench/routing_draws.cpp" -o "$dir/ggml_mul_mat_id" \
  -L"$dir" -l:libggml.vulkan.v0.5.0.so -l:libggml-base.so -Wl,-rpath,'$ORIGIN'
{
  echo "ggml peer: ggml $ggml_version, npm @node-llama-cpp/linux-x64-vulkan@$version, headers from node-llama-cpp@$version"
  echo "built $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME") from $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
} >"$dir/PEER_INFO.txt"
tar -C "$(dirname "$dir")" --owner=0 --group=0 -czf "$dir.tar.gz" "$(basename "$dir")"
echo "fetch_ggml.sh: $dir.tar.gz ($(du -h "$dir.tar.gz" | cut -f1))" >&2
