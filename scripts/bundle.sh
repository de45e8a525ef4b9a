#!/usr/bin/env bash
# Packs the built vkgmm CLI, its test programs and the Debian libraries they need into one relocatable
# archive, for a Linux machine that has a GPU driver and little else (no Vulkan loader, no GL dispatch
# libraries, no validation layer). Inside, run.sh (scripts/bundle_run.sh) runs `vkgmm info`, the bench
# and the test suite there; bench/README.md ("Running on another machine") says how.
#
# usage: scripts/bundle.sh [-o ARCHIVE.tar.gz] [-v PREFIX] [BUILD_DIR]
#   BUILD_DIR  a built tree (scripts/build.sh); default build/ or $VKGMM_BUILD_DIR
#   ARCHIVE    default BUILD_DIR/vkgmm-bundle.tar.gz; it unpacks into vkgmm-bundle/
#   PREFIX     take the Vulkan loader and the validation layer from PREFIX (PREFIX/lib/x86_64-linux-gnu,
#              PREFIX/share/vulkan/explicit_layer.d) instead of this machine's: a layer that knows the
#              GPU's extensions. Debian 12's (1.3.239) predates VK_KHR_cooperative_matrix and fails every
#              validated test on a driver that lists it (NVIDIA's); sid's, unpacked by
#              `VKGMM_GPU_SUITE=sid scripts/gpu_compilers.sh fetch` (PREFIX build/gpu-compilers-sid/usr),
#              knows it and needs glibc >= 2.38 on the GPU machine
#
# What is carried and what is not:
# - the programs (bin/) and every shared library they load, recursively (lib/), found with ldd: the
#   Vulkan loader, OpenBLAS and its Fortran runtime, libvkgmm.so.0 for the programs linked to it;
# - the GL vendor-neutral dispatch libraries (libglvnd), libXext and what they load: NVIDIA's Vulkan
#   driver (libGLX_nvidia.so.0) links them, and a machine with only the driver may not have them;
# - the Khronos validation layer (layers/), its manifest naming the library relative to itself;
# - the fuzzers' corpora (share/fuzz/corpus), which test_host replays.
# Not carried: glibc (libc, libm, ld-linux, ...), which must be the machine's own (a carried libc
# cannot run under another glibc's dynamic linker), and libstdc++ / libgcc_s, which every glibc
# distribution has and which are at least as new there as Debian 12's on the distributions this is
# for (BUNDLE_INFO.txt lists the newest GLIBC_ and GLIBCXX_ versions the bundle needs).
# The shaders are compiled into the programs (vkgmm_embed_shader in CMakeLists.txt): no SPIR-V files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=""
vulkan_from=""
while getopts o:v:h opt; do
  case $opt in o) out=$OPTARG ;; v) vulkan_from=$(cd "$OPTARG" && pwd) || exit 2 ;; *) sed -n '7,15p' "$0" >&2; exit 2 ;; esac
done
shift $((OPTIND - 1))
build=$(cd "${1:-${VKGMM_BUILD_DIR:-$root/build}}" && pwd)
out=${out:-$build/vkgmm-bundle.tar.gz}
case $out in /*) ;; *) out=$PWD/$out ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/vkgmm-bundle
mkdir -p "$stage/bin" "$stage/lib" "$stage/layers" "$stage/share/fuzz"

# --- the programs: the CLI (gpu-report is one of its commands) and what ctest's device suite runs
required=(vkgmm tests/test_device tests/test_host)
optional=(tests/test_embedding tests/test_c_api examples/app_record/vkgmm_example_app
          examples/moe_layer/vkgmm_example_moe)
for p in "${required[@]}"; do
  [ -x "$build/$p" ] || { echo "bundle.sh: $build/$p is not built (scripts/build.sh)" >&2; exit 1; }
done
programs=()
for p in "${required[@]}" "${optional[@]}"; do
  if [ -x "$build/$p" ]; then cp "$build/$p" "$stage/bin/"; programs+=("$build/$p")
  else echo "bundle.sh: $p is not built, left out" >&2; fi
done
cp -r "$root/fuzz/corpus" "$stage/share/fuzz/"

# --- libraries
# The machine's own (see above): glibc's libraries, its dynamic linker, the GCC runtimes.
host_owned='^(linux-vdso|ld-linux[^ ]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libthread_db|libBrokenLocale|libstdc\+\+|libgcc_s)\.so'
# "name path" for every library FILE loads, recursively (ldd resolves the whole tree, RUNPATHs included).
deps() {
  ldd "$1" | awk '$2 == "=>" { if ($3 == "not") { print "MISSING", $1 } else { print $1, $3 } }'
}
# The loader's directory: the GL dispatch libraries and the layer are looked for beside it.
libdir=$(dirname "$(deps "$build/vkgmm" | awk '$1 == "libvulkan.so.1" { print $2 }')")
[ "$libdir" != . ] || { echo "bundle.sh: vkgmm does not link libvulkan.so.1" >&2; exit 1; }

# The validation layer: its manifest (Debian's vulkan-validationlayers), library_path made relative to it.
manifest=""
layer_dirs="/usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d"
if [ -n "$vulkan_from" ]; then
  layer_dirs=$vulkan_from/share/vulkan/explicit_layer.d
  libdir_from=$vulkan_from/lib/x86_64-linux-gnu
  [ -e "$libdir_from/libvulkan.so.1" ] || { echo "bundle.sh: no $libdir_from/libvulkan.so.1" >&2; exit 1; }
fi
for d in $layer_dirs; do
  [ -f "$d/VkLayer_khronos_validation.json" ] && { manifest=$d/VkLayer_khronos_validation.json; break; }
done
[ -n "$manifest" ] || { echo "bundle.sh: no validation layer (scripts/install_deps.sh)" >&2; exit 1; }
layer_lib=$(sed -n 's/.*"library_path" *: *"\([^"]*\)".*/\1/p' "$manifest")
case $layer_lib in /*) [ -z "$vulkan_from" ] || layer_lib=$libdir_from/$(basename "$layer_lib") ;;
  *) layer_lib=${libdir_from:-$libdir}/$(basename "$layer_lib") ;; esac
cp -L "$layer_lib" "$stage/layers/"
sed "s|\"library_path\" *: *\"[^\"]*\"|\"library_path\": \"./$(basename "$layer_lib")\"|" "$manifest" \
  >"$stage/layers/VkLayer_khronos_validation.json"

# libglvnd (Debian: libglvnd0 libglx0 libopengl0 libegl1) and libXext (libxext6): NVIDIA's Vulkan driver,
# libGLX_nvidia.so.0, links them (and libX11, which libGLX.so.0 brings); vkgmm does not.
glvnd=()
for l in libGLdispatch.so.0 libGLX.so.0 libOpenGL.so.0 libEGL.so.1 libXext.so.6; do
  [ -e "$libdir/$l" ] || { echo "bundle.sh: no $libdir/$l (scripts/install_deps.sh)" >&2; exit 1; }
  glvnd+=("$libdir/$l")
done

declare -A carried=()  # name -> the file it was copied from
for f in "${programs[@]}" "$layer_lib" "${glvnd[@]}"; do
  case " ${glvnd[*]} " in *" $f "*) carried[$(basename "$f")]=$f ;; esac
  while read -r name path; do
    [ "$name" != MISSING ] || { echo "bundle.sh: $f needs $path, which is not found" >&2; exit 1; }
    [[ $name =~ $host_owned ]] && continue
    carried[$name]=$path
  done < <(deps "$f")
done
[ -z "$vulkan_from" ] || carried[libvulkan.so.1]=$libdir_from/libvulkan.so.1
for name in "${!carried[@]}"; do cp -L "${carried[$name]}" "$stage/lib/$name"; done

# --- the runner and what the bundle is
cp "$root/scripts/bundle_run.sh" "$stage/run.sh"
cp "$root/tests/variants.txt" "$stage/variants.txt"  # the test variants run.sh runs, as ctest does
chmod +x "$stage/run.sh"
newest() {  # the newest symbol version of prefix $1 that the bundle's ELF files need
  find "$stage/bin" "$stage/lib" "$stage/layers" -type f ! -name '*.json' -exec objdump -T {} + 2>/dev/null |
    grep -o "$1[0-9.]*[0-9]" | sort -uV | tail -1
}
package() {  # the Debian package (and version) that installed file $1
  local p
  case $1 in "$build"/*) echo "this build"; return ;; esac
  if [ -n "$vulkan_from" ] && [[ $1 == "$vulkan_from"/* ]]; then echo "from $vulkan_from"; return; fi
  p=$(dpkg -S "$(readlink -f "$1")" 2>/dev/null || dpkg -S "/usr$(readlink -f "$1")" 2>/dev/null) || { echo "?"; return; }
  p=${p%%:*}
  echo "$p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"
}
{
  echo "vkgmm bundle: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown), made $(date -u +%FT%TZ)"
  echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -m)"
  if command -v objdump >/dev/null; then
    echo "needs of the machine: glibc >= $(newest GLIBC_ | sed 's/GLIBC_//'), libstdc++ with $(newest GLIBCXX_)" \
         "and $(newest CXXABI_), libgcc_s"
  fi
  echo "programs (bin/): $(cd "$stage/bin" && echo *)"
  echo "libraries (lib/, layers/), each from its Debian package:"
  for name in $(printf '%s\n' "${!carried[@]}" | sort) "$(basename "$layer_lib")"; do
    src=${carried[$name]:-$layer_lib}
    printf '  %-36s %s\n' "$name" "$(package "$src")"
  done
} >"$stage/BUNDLE_INFO.txt"

mkdir -p "$(dirname "$out")"
tar -C "$work" --owner=0 --group=0 -czf "$out" vkgmm-bundle
cat "$stage/BUNDLE_INFO.txt"
echo "bundle.sh: $out ($(du -h "$out" | cut -f1))"
