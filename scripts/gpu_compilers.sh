#!/usr/bin/env bash
# GPU compilers without a GPU: Debian's Mesa (NVK, ANV, RADV), glslc and spirv-tools, unpacked into a
# private folder and run through that folder's own dynamic loader, with Mesa's drm-shim faking the
# kernel driver. Nothing is installed into the system.
#
#   scripts/gpu_compilers.sh fetch                        download and unpack (idempotent)
#   scripts/gpu_compilers.sh targets                      list the suite's targets
#   scripts/gpu_compilers.sh run TARGET -- PROGRAM ARGS   run PROGRAM (e.g. build/vkgmm) on TARGET's compiler
#   scripts/gpu_compilers.sh glslc ARGS                   the suite's glslc (trixie's needs glibc 2.38)
#   scripts/gpu_compilers.sh tool NAME ARGS               another of the folder's programs (spirv-val; trixie's vulkaninfo)
#
#   VKGMM_GPU_SUITE=trixie   (the default) trixie's Mesa 25.0 and tools at pinned versions: ctest's gates
#   VKGMM_GPU_SUITE=sid      sid's of the day, unpinned, with lavapipe and the validation layer (target lvp)
#
# The folder is ${VKGMM_GPU_COMPILERS:-<repo>/build/gpu-compilers} (sid: <repo>/build/gpu-compilers-sid).
# fetch also leaves DIR/wrap/glslc and DIR/wrap/spirv-val, the suite's compilers as single programs, for
# cmake's -DVKGMM_GLSLC and -DVKGMM_SPIRV_VAL. A sid folder keeps the day it was fetched (its versions are
# in DIR/versions.txt); delete the folder to fetch today's sid.
set -euo pipefail

die() { echo "gpu_compilers.sh: $*" >&2; exit 1; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${VKGMM_GPU_SUITE:-trixie}"
case "$suite" in
  trixie) dir="${VKGMM_GPU_COMPILERS:-$root/build/gpu-compilers}" ;;
  sid) dir="${VKGMM_GPU_COMPILERS:-$root/build/gpu-compilers-sid}" ;;
  *) die "VKGMM_GPU_SUITE is '$suite': trixie or sid" ;;
esac
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

# sid is not pinned: it changes daily, so fetch installs apt's dependency closure of these packages at
# the day's versions and records them. libc6 and the C++ runtime are named because the folder's loader
# runs every program; linux-libc-dev is the i915 uapi header.
sid_wants=(mesa-vulkan-drivers mesa-drm-shim libvulkan1 libc6 libstdc++6 libgcc-s1 glslc spirv-tools
  vulkan-validationlayers linux-libc-dev)

# name|suites|icd|variable|preload|what: one line a target. Preloads are looked up in $lib, then
# $dir/shim. trixie's shim does not know Ada or Blackwell; sid's does. lvp (lavapipe) is no compiler
# target but a CPU device that runs work, so it needs no shim and no variable.
targets=(
  "nvk-tu102|trixie sid|nouveau|NOUVEAU_CHIPSET=162|libnouveau_noop_drm_shim.so|NVK/NAK, Turing TU102"
  "nvk-ga102|trixie sid|nouveau|NOUVEAU_CHIPSET=172|libnouveau_noop_drm_shim.so|NVK/NAK, Ampere GA102"
  "nvk-ad102|sid|nouveau|NOUVEAU_CHIPSET=192|libnouveau_noop_drm_shim.so|NVK/NAK, Ada AD102"
  "nvk-gb202|sid|nouveau|NOUVEAU_CHIPSET=1b2|libnouveau_noop_drm_shim.so|NVK/NAK, Blackwell GB202"
  "anv-dg2|trixie sid|intel|VKGMM_I915_PCI_ID=0x56a0|i915_shim.so:libnouveau_noop_drm_shim.so|ANV, Arc A770 (DG2, Xe-HPG)"
  "anv-bmg|trixie sid|intel|VKGMM_I915_PCI_ID=0xe20b|i915_shim.so:libnouveau_noop_drm_shim.so|ANV, Arc B580 (BMG-G21, Xe2)"
  "radv-navi31|trixie sid|radeon|AMDGPU_GPU_ID=navi31|libamdgpu_noop_drm_shim.so|RADV/ACO, RX 7900 (NAVI31, RDNA3)"
  "lvp|sid|lvp|||lavapipe, a CPU device that runs work (sid's validation layer)"
)

usage() {
  sed -n '6,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# The suite's lines of the targets table.
suite_targets() {
  local t suites
  for t in "${targets[@]}"; do
    IFS='|' read -r _ suites _ <<<"$t"
    [[ " $suites " != *" $suite "* ]] || echo "$t"
  done
}

# The stamp records the packages unpacked. trixie's must be the pins, so a rerun with the same pins
# does nothing and a changed pin fetches again. sid's is the closure of the day it was fetched, which
# a rerun keeps: without it, every fetch would need the network and might unpack a different Mesa.
stamp_current() {
  [ -s "$dir/.stamp" ] || return 1
  [ "$suite" = sid ] || [ "$(cat "$dir/.stamp")" = "$(printf '%s\n' "${pins[@]}")" ]
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
  if stamp_current; then
    write_icds
    write_layers
    build_shim
    write_wrappers
    if [ "$suite" = sid ]; then
      echo "gpu compilers present in $dir (sid of $(date -r "$dir/.stamp" +%F)," \
        "$(grep '^mesa-vulkan-drivers=' "$dir/.stamp"); delete the folder to fetch today's sid)"
    else
      echo "gpu compilers present in $dir"
    fi
    return
  fi
  local start=$SECONDS
  # Refuse a folder this script did not make: fetch deletes and unpacks top-level folders in it.
  if [ -d "$dir" ] && [ -n "$(ls -A "$dir")" ] && [ ! -f "$dir/apt/sources.list" ]; then
    die "$dir is not empty and is not a gpu-compilers folder; set VKGMM_GPU_COMPILERS to a new folder"
  fi
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs"
  # bookworm's debian-archive-keyring already holds trixie's keys, so the lists are verified as usual
  # (sid's are signed with the same keys).
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f /usr/share/keyrings/debian-archive-trixie-stable.gpg ] ||
    die "$keyring lacks trixie's keys (debian-archive-keyring 2023.3 or later has them)"
  if [ "$suite" = trixie ]; then
    # trixie-security as well as trixie: a security version moves into trixie at the next point
    # release, so a pin stays served for as long as possible.
    cat >"$dir/apt/sources.list" <<EOF
deb [signed-by=$keyring] http://deb.debian.org/debian trixie main
deb [signed-by=$keyring] http://deb.debian.org/debian-security trixie-security main
EOF
  else
    echo "deb [signed-by=$keyring] http://deb.debian.org/debian sid main" >"$dir/apt/sources.list"
  fi
  local -a opts packages
  mapfile -t opts < <(apt_opts)
  apt-get "${opts[@]}" -qq update || die "apt-get update of $suite's lists failed"
  "${suite}_packages"

  (cd "$dir/debs" && apt-get "${opts[@]}" -qq download "${packages[@]}") || die "apt-get download failed"
  # Unpack into a clean tree, so files of earlier packages do not linger. Only the names the packages
  # and this script create are removed.
  rm -f "$dir/.stamp" "$dir/versions.txt"
  rm -rf "${dir:?}/usr" "$dir/etc" "$dir/lib" "$dir/lib64" "$dir/bin" "$dir/sbin" "$dir/var" \
    "$dir/icd" "$dir/shim" "$dir/layers"
  local pin name version deb debs=()
  for pin in "${packages[@]}"; do
    name="${pin%%=*}" version="${pin#*=}"
    # apt names the file name_version_arch.deb with the epoch's ':' written as %3a.
    deb=$(ls "$dir/debs/${name}_${version/:/%3a}_"*.deb) || die "no .deb for $pin"
    dpkg -x "$deb" "$dir"
    debs+=("$deb")
  done
  [ -x "$loader" ] || die "no dynamic loader at $loader"
  write_icds
  write_layers
  build_shim
  write_wrappers
  # trixie's versions are the pins above; sid's are known only now, so they are kept beside the tree.
  [ "$suite" = trixie ] || printf '%s\n' "${packages[@]}" >"$dir/versions.txt"
  printf '%s\n' "${packages[@]}" >"$dir/.stamp"
  echo "fetched ${#packages[@]} $suite packages ($(du -cm "${debs[@]}" | awk 'END {print $1}') MB of .deb)" \
    "into $dir in $((SECONDS - start)) s"
  if [ "$suite" = sid ]; then
    echo "sid's versions (also in $dir/versions.txt):"
    sed 's/^/  /' "$dir/versions.txt"
  fi
}

# trixie's packages are the pins. Every pin is checked first (one apt-cache call: each parses all the
# lists), so one message names all the versions that are gone.
trixie_packages() {
  local served pin missing=()
  served="$(apt-cache "${opts[@]}" show "${pins[@]}" 2>/dev/null |
    awk '/^Package:/ {p = $2} /^Version:/ {print p "=" $2}')"
  for pin in "${pins[@]}"; do
    grep -qxF -- "$pin" <<<"$served" && continue
    missing+=("$pin (served now: $(apt-cache "${opts[@]}" policy "${pin%%=*}" | awk '/Candidate:/ {print $2}'))")
  done
  [ ${#missing[@]} = 0 ] || die "pinned versions no longer served by trixie:$(printf '\n  %s' "${missing[@]}")"
  packages=("${pins[@]}")
}

# sid's packages are apt's dependency closure of sid_wants at today's versions. The status file is
# /dev/null, so nothing counts as installed and the closure reaches libc6 and all the loader needs.
sid_packages() {
  local sim
  sim="$(apt-get "${opts[@]}" -s install --no-install-recommends "${sid_wants[@]}")" ||
    die "apt cannot install sid's ${sid_wants[*]} together today (sid moves daily; a transition may be under way)"
  mapfile -t packages < <(awk '/^Inst / {print $2 "=" substr($3, 2)}' <<<"$sim")
  [ ${#packages[@]} -gt 0 ] || die "apt-get -s install listed no sid packages"
}

# Mesa's own json files name the library without a path, which would make the Vulkan loader search
# the system's folders; ours are the same files with the folder's full path, one per driver the
# suite's targets use.
write_icds() {
  mkdir -p "$dir/icd"
  local drv
  for drv in $(suite_targets | cut -d'|' -f3 | awk '!seen[$0]++'); do
    sed "s|\"library_path\": \"|&$lib/|" "$dir/usr/share/vulkan/icd.d/${drv}_icd.json" >"$dir/icd/$drv.json"
    grep -q "\"$lib/libvulkan_$drv.so\"" "$dir/icd/$drv.json" || die "unexpected ${drv}_icd.json"
  done
}

# sid's validation layer for lvp, its json with the library's full path as the ICDs' are: the system's
# (bookworm's 1.3.239) rejects KHR cooperative matrices. layers/implicit stays empty: it replaces the
# system's implicit layers, bookworm builds. trixie's folder has no layers.
write_layers() {
  [ "$suite" = sid ] || return 0
  local json=VkLayer_khronos_validation.json
  mkdir -p "$dir/layers/implicit"
  sed "s|\"library_path\": \"|&$lib/|" "$dir/usr/share/vulkan/explicit_layer.d/$json" >"$dir/layers/$json"
  grep -q "\"$lib/libVkLayer_khronos_validation.so\"" "$dir/layers/$json" || die "unexpected $json"
}

# glslc and spirv-val as programs cmake can be given: each runs the suite's through the folder's loader.
write_wrappers() {
  mkdir -p "$dir/wrap"
  local t
  for t in glslc spirv-val; do
    printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$lib" "$dir/usr/bin/$t" >"$dir/wrap/$t.tmp"
    chmod +x "$dir/wrap/$t.tmp"
    mv "$dir/wrap/$t.tmp" "$dir/wrap/$t"
  done
}

# The i915 shim, built with the system's cc against the suite's uapi headers (bookworm's linux-libc-dev
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
  local t name suites
  while IFS= read -r t; do
    [ "${t%%|*}" = "$1" ] && { echo "$t"; return; }
  done < <(suite_targets)
  # A target of the other suite gets the setting that selects it.
  for t in "${targets[@]}"; do
    IFS='|' read -r name suites _ <<<"$t"
    [ "$name" = "$1" ] && die "target '$1' is not $suite's: run it with VKGMM_GPU_SUITE=${suites// / or }"
  done
  die "unknown target '$1' (scripts/gpu_compilers.sh targets lists them)"
}

need_fetch() {
  [ -f "$dir/.stamp" ] || die "nothing fetched in $dir: run scripts/gpu_compilers.sh fetch"
}

# exec PROGRAM through the folder's loader: the suite's glibc, libstdc++ and Vulkan loader win over the
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
  IFS='|' read -r name _ icd vars preload _ <<<"$spec"
  [[ "$preload" != *i915_shim.so* ]] || build_shim
  for p in ${preload//:/ }; do
    if [ -f "$lib/$p" ]; then full+=("$lib/$p"); else full+=("$dir/shim/$p"); fi
  done
  if [ "$icd" = lvp ]; then
    # lavapipe runs work, so the caller's layer choices stay, but only the folder's layers can be
    # found: VK_LAYER_PATH and VK_IMPLICIT_LAYER_PATH replace the loader's two searches. Disabling the
    # system's implicit layers instead would make the loader warn, which vkgmm's validation counts as
    # a failure. No cache, as below.
    unset VK_ICD_FILENAMES VK_ADD_DRIVER_FILES VK_ADD_LAYER_PATH VK_ADD_IMPLICIT_LAYER_PATH LD_PRELOAD \
      LD_LIBRARY_PATH
    export VK_DRIVER_FILES="$dir/icd/$icd.json" VK_LAYER_PATH="$dir/layers" \
      VK_IMPLICIT_LAYER_PATH="$dir/layers/implicit" NODEVICE_SELECT=1 MESA_SHADER_CACHE_DISABLE=true
  else
    # Only this target's driver, no layers (the system's implicit layers are bookworm builds, and
    # validation is not wanted), no device-select layer, and no cache so every run compiles.
    unset VK_ICD_FILENAMES VK_ADD_DRIVER_FILES VK_INSTANCE_LAYERS VK_LAYER_PATH VK_ADD_LAYER_PATH \
      VK_LOADER_LAYERS_ENABLE LD_PRELOAD LD_LIBRARY_PATH
    export VK_DRIVER_FILES="$dir/icd/$icd.json" VK_LOADER_LAYERS_DISABLE='~all~' NODEVICE_SELECT=1 \
      MESA_SHADER_CACHE_DISABLE=true
  fi
  [ -z "$vars" ] || export "${vars?}"
  run_loader "$(IFS=:; echo "${full[*]}")" "$@"
}

case "${1:-}" in
  fetch) fetch ;;
  targets) suite_targets | while IFS='|' read -r n _ _ v _ what; do
      if [ -n "$v" ]; then printf '%-12s %-36s %s\n' "$n" "$what" "$v"; else printf '%-12s %s\n' "$n" "$what"; fi
    done ;;
  run) shift; [ $# -gt 0 ] || die "run TARGET -- PROGRAM ARGS"; run_target "$@" ;;
  glslc) shift; need_fetch; run_loader "" "$dir/usr/bin/glslc" "$@" ;;
  tool) shift; need_fetch; [ $# -gt 0 ] || die "tool NAME ARGS"; t="$1"; shift
    [ -x "$dir/usr/bin/$t" ] || die "no $t in $dir/usr/bin"; run_loader "" "$dir/usr/bin/$t" "$@" ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
