#!/usr/bin/env bash
# GPU compilers without a GPU: Debian trixie's Mesa (NVK, ANV, RADV), glslc and spirv-tools, unpacked
# into a private folder and run through that folder's own dynamic loader, with Mesa's drm-shim faking
# the kernel driver. Nothing is installed into the system.
#
#   scripts/gpu_compilers.sh fetch                        download and unpack (idempotent)
#   scripts/gpu_compilers.sh targets                      list the targets
#   scripts/gpu_compilers.sh run TARGET -- PROGRAM ARGS   run PROGRAM (e.g. build/vkgmm) on TARGET's compiler
#   scripts/gpu_compilers.sh glslc ARGS                   trixie's glslc (it needs glibc 2.38)
#   scripts/gpu_compilers.sh tool NAME ARGS               another of the folder's programs (spirv-val, vulkaninfo)
#
# The folder is ${VKGMM_GPU_COMPILERS:-<repo>/build/gpu-compilers}. fetch also leaves DIR/wrap/glslc and
# DIR/wrap/spirv-val, trixie's compilers as single programs, for cmake's -DVKGMM_GLSLC and -DVKGMM_SPIRV_VAL.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${VKGMM_GPU_COMPILERS:-$root/build/gpu-compilers}"
lib="$dir/usr/lib/x86_64-linux-gnu"
loader="$lib/ld-linux-x86-64.so.2"

# Exact trixie versions: the drivers' code, and so every listing, depends on them. This is apt's
# dependency closure of mesa-vulkan-drivers, mesa-drm-shim, libvulkan1, glslc, spirv-tools and
# vulkan-tools (--no-install-recommends), plus linux-libc-dev for the i915 uapi header. When Debian
# stops serving one of these, fetch says which; update the pin after checking the listings still match.
pins=(
  gcc-14-base=14.2.0-19
  libgcc-s1=14.2.0-19
  libc6=2.41-12+deb13u5
  libexpat1=2.9.0-1~deb13u1
  libstdc++6=14.2.0-19
  libshaderc1=2025.2-1
  glslc=2025.2-1
  libmd0=1.1.0-2+b1
  libbsd0=0.12.2-2
  libdrm-common=2.4.124-2
  libdrm2=2.4.124-2
  libdrm-amdgpu1=2.4.124-2
  libtinfo6=6.5+20250216-2
  libedit2=3.1-20250104-1
  libzstd1=1.5.7+dfsg-1+deb13u1
  zlib1g=1:1.3.dfsg+really1.3.1-1+deb13u1
  libelf1t64=0.192-4
  libffi8=3.4.8-2
  liblzma5=5.8.1-1+deb13u2
  libxml2=2.12.7+dfsg+really2.9.14-2.1+deb13u3
  libz3-4=4.13.3-1
  libllvm19=1:19.1.7-3+b1
  libvulkan1=1.4.309.0-1
  libwayland-client0=1.23.1-3
  libxau6=1:1.0.11-1
  libxdmcp6=1:1.1.5-1
  libxcb1=1.17.0-2+b1
  libx11-data=2:1.8.12-1
  libx11-6=2:1.8.12-1
  libx11-xcb1=2:1.8.12-1
  libxcb-dri3-0=1.17.0-2+b1
  libxcb-present0=1.17.0-2+b1
  libxcb-randr0=1.17.0-2+b1
  libxcb-shm0=1.17.0-2+b1
  libxcb-sync1=1.17.0-2+b1
  libxcb-xfixes0=1.17.0-2+b1
  libxshmfence1=1.3.3-1
  mesa-drm-shim=25.0.7-2+deb13u1
  mesa-vulkan-drivers=25.0.7-2+deb13u1
  spirv-tools=2025.1~rc1-1
  vulkan-tools=1.4.304.0+dfsg1-1
  linux-libc-dev=6.12.117-1
)

# name|icd|variable|preload|what: one line a target. Preloads are looked up in $lib, then $dir/shim.
targets=(
  "nvk-tu102|nouveau|NOUVEAU_CHIPSET=162|libnouveau_noop_drm_shim.so|NVK/NAK, Turing TU102"
  "nvk-ga102|nouveau|NOUVEAU_CHIPSET=172|libnouveau_noop_drm_shim.so|NVK/NAK, Ampere GA102"
  "anv-dg2|intel|VKGMM_I915_PCI_ID=0x56a0|i915_shim.so:libnouveau_noop_drm_shim.so|ANV, Arc A770 (DG2, Xe-HPG)"
  "anv-bmg|intel|VKGMM_I915_PCI_ID=0xe20b|i915_shim.so:libnouveau_noop_drm_shim.so|ANV, Arc B580 (BMG-G21, Xe2)"
  "radv-navi31|radeon|AMDGPU_GPU_ID=navi31|libamdgpu_noop_drm_shim.so|RADV/ACO, RX 7900 (NAVI31, RDNA3)"
)

die() { echo "gpu_compilers.sh: $*" >&2; exit 1; }

usage() {
  sed -n '6,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# The stamp records the pins, so a rerun with the same pins does nothing.
stamp_text() {
  printf '%s\n' "${pins[@]}"
}

apt_opts() {
  local a="$dir/apt"
  printf '%s\n' \
    -o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=- \
    -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o Dir::State::status=/dev/null \
    -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -o Debug::NoLocking=1
  # As root apt hands downloads to the _apt user, who cannot write into a private folder; the files
  # are checked against the signed Packages lists either way.
  [ "$(id -u)" = 0 ] && printf '%s\n' -o APT::Sandbox::User=root
  return 0
}

fetch() {
  if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$(stamp_text)" ]; then
    write_icds
    build_shim
    write_wrappers
    echo "gpu compilers present in $dir"
    return
  fi
  local start=$SECONDS
  # Refuse a folder this script did not make: fetch deletes and unpacks top-level folders in it.
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/apt/sources.list" ]; then
    die "$dir is not empty and is not a gpu-compilers folder; set VKGMM_GPU_COMPILERS to a new folder"
  fi
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs"
  # bookworm's debian-archive-keyring already holds trixie's keys, so the lists are verified as usual.
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f /usr/share/keyrings/debian-archive-trixie-stable.gpg ] ||
    die "$keyring lacks trixie's keys (debian-archive-keyring 2023.3 or later has them)"
  # trixie-security as well as trixie: a security version moves into trixie at the next point
  # release, so a pin stays served for as long as possible.
  cat >"$dir/apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian trixie main
deb [signed-by=$keyring] http://deb.debian.org/debian-security trixie-security main
EOF
  local -a opts
  mapfile -t opts < <(apt_opts)
  apt-get "${opts[@]}" -qq update || die "apt-get update of trixie's lists failed"

  # Check every pin first (one apt-cache call: each parses all the lists), so one message names all
  # the versions that are gone.
  local served pin name version missing=()
  served="$(apt-cache "${opts[@]}" show "${pins[@]}" 2>/dev/null |
    awk '/^Package:/ {p = $2} /^Version:/ {print p "=" $2}')"
  for pin in "${pins[@]}"; do
    grep -qxF -- "$pin" <<<"$served" && continue
    missing+=("$pin (served now: $(apt-cache "${opts[@]}" policy "${pin%%=*}" | awk '/Candidate:/ {print $2}'))")
  done
  [ ${#missing[@]} = 0 ] || die "pinned versions no longer served by trixie:$(printf '\n  %s' "${missing[@]}")"

  (cd "$dir/debs" && apt-get "${opts[@]}" -qq download "${pins[@]}") || die "apt-get download failed"
  # Unpack into a clean tree, so files of earlier pins do not linger. Only the names the packages
  # and this script create are removed.
  rm -f "$dir/.stamp"
  rm -rf "${dir:?}/usr" "$dir/etc" "$dir/lib" "$dir/lib64" "$dir/bin" "$dir/sbin" "$dir/var" \
    "$dir/icd" "$dir/shim"
  local deb debs=()
  for pin in "${pins[@]}"; do
    name="${pin%%=*}" version="${pin#*=}"
    # apt names the file name_version_arch.deb with the epoch's ':' written as %3a.
    deb=$(ls "$dir/debs/${name}_${version/:/%3a}_"*.deb) || die "no .deb for $pin"
    dpkg -x "$deb" "$dir"
    debs+=("$deb")
  done
  [ -x "$loader" ] || die "no dynamic loader at $loader"
  write_icds
  build_shim
  write_wrappers
  stamp_text >"$dir/.stamp"
  echo "fetched ${#pins[@]} trixie packages ($(du -cm "${debs[@]}" | awk 'END {print $1}') MB of .deb)" \
    "into $dir in $((SECONDS - start)) s"
}

# Mesa's own json files name the library without a path, which would make the Vulkan loader search
# the system's folders; ours are the same files with the folder's full path.
write_icds() {
  mkdir -p "$dir/icd"
  local drv
  for drv in nouveau intel radeon; do
    sed "s|\"library_path\": \"|&$lib/|" "$dir/usr/share/vulkan/icd.d/${drv}_icd.json" >"$dir/icd/$drv.json"
    grep -q "\"$lib/libvulkan_$drv.so\"" "$dir/icd/$drv.json" || die "unexpected ${drv}_icd.json"
  done
}

# glslc and spirv-val as programs cmake can be given: each runs trixie's through the folder's loader.
write_wrappers() {
  mkdir -p "$dir/wrap"
  local t
  for t in glslc spirv-val; do
    printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$lib" "$dir/usr/bin/$t" >"$dir/wrap/$t.tmp"
    chmod +x "$dir/wrap/$t.tmp"
    mv "$dir/wrap/$t.tmp" "$dir/wrap/$t"
  done
}

# The i915 shim, built with the system's cc against trixie's uapi headers (bookworm's linux-libc-dev
# has no drm/ folder). Rebuilt only when its source is newer, so fetch and run stay instant.
build_shim() {
  local src="$root/tools/i915_shim/i915_shim.c" so="$dir/shim/i915_shim.so"
  [ "$so" -nt "$src" ] && return
  mkdir -p "$dir/shim"
  cc -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -isystem "$dir/usr/include" \
    -o "$so.tmp" "$src" -ldl || die "building $src failed"
  mv "$so.tmp" "$so"
}

find_target() {
  local t
  for t in "${targets[@]}"; do
    [ "${t%%|*}" = "$1" ] && { echo "$t"; return; }
  done
  die "unknown target '$1' (scripts/gpu_compilers.sh targets lists them)"
}

need_fetch() {
  [ -f "$dir/.stamp" ] || die "nothing fetched in $dir: run scripts/gpu_compilers.sh fetch"
}

# exec PROGRAM through the folder's loader: trixie's glibc, libstdc++ and Vulkan loader win over the
# system's; a library the folder lacks still comes from the system (the loader's default search).
run_loader() {
  local preload="$1" program="$2"
  shift 2
  [[ "$program" == */* ]] || program="$(command -v "$program")" || die "no program '$program'"
  local -a pre=()
  [ -z "$preload" ] || pre=(--preload "$preload")
  exec "$loader" --library-path "$lib" "${pre[@]}" "$program" "$@"
}

run_target() {
  need_fetch
  local spec
  spec="$(find_target "$1")"
  shift
  [ "${1:-}" = "--" ] && shift
  [ $# -gt 0 ] || die "run TARGET -- PROGRAM ARGS: no PROGRAM"
  local name icd vars preload p full=()
  IFS='|' read -r name icd vars preload _ <<<"$spec"
  [[ "$preload" != *i915_shim.so* ]] || build_shim
  for p in ${preload//:/ }; do
    if [ -f "$lib/$p" ]; then full+=("$lib/$p"); else full+=("$dir/shim/$p"); fi
  done
  # Only this target's driver, no layers (the system's implicit layers are bookworm builds, and
  # validation is not wanted), no device-select layer, and no cache so every run compiles.
  unset VK_ICD_FILENAMES VK_ADD_DRIVER_FILES VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH \
    VK_LOADER_LAYERS_ENABLE LD_PRELOAD LD_LIBRARY_PATH
  export VK_DRIVER_FILES="$dir/icd/$icd.json" VK_LOADER_LAYERS_DISABLE='~all~' NODEVICE_SELECT=1 \
    MESA_SHADER_CACHE_DISABLE=true
  export "${vars?}"
  run_loader "$(IFS=:; echo "${full[*]}")" "$@"
}

case "${1:-}" in
  fetch) fetch ;;
  targets) for t in "${targets[@]}"; do
      IFS='|' read -r n _ v _ what <<<"$t"; printf '%-12s %-36s %s\n' "$n" "$what" "$v"; done ;;
  run) shift; [ $# -gt 0 ] || die "run TARGET -- PROGRAM ARGS"; run_target "$@" ;;
  glslc) shift; need_fetch; run_loader "" "$dir/usr/bin/glslc" "$@" ;;
  tool) shift; need_fetch; [ $# -gt 0 ] || die "tool NAME ARGS"; t="$1"; shift
    [ -x "$dir/usr/bin/$t" ] || die "no $t in $dir/usr/bin"; run_loader "" "$dir/usr/bin/$t" "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
