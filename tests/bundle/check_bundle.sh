#!/usr/bin/env bash
# scripts/bundle.sh's archive as a machine with only a driver sees it: built, unpacked elsewhere, and run
# with a clean environment (env -i) on whatever driver run.sh finds (lavapipe here, its manifest in
# /usr/share/vulkan/icd.d beside Mesa's hardware drivers that have no device here). Checks that info, a
# test subset and `all` succeed, that every process loads the bundle's Vulkan loader and validation
# layer and exactly one driver, that a driver the user names is kept, and that a failing step is
# recorded while the others still run.
# usage: check_bundle.sh <source dir> <build dir>
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-bundle-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "--- $*"; }
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run.sh ARGS in a clean environment (plus VAR=VALUE words before --), from $work/cwd
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  (cd "$work/cwd" && env -i PATH=/usr/bin:/bin HOME="$work/home" "${envs[@]}" bash "$bundle/run.sh" "$@")
}

step "bundle, then unpack it elsewhere"
"$src/scripts/bundle.sh" -o "$work/made/vkgmm-bundle.tar.gz" "$build" >"$work/bundle.log" 2>&1 \
  || { cat "$work/bundle.log"; fail "bundle.sh"; }
mkdir -p "$work/unpacked" "$work/cwd" "$work/home" "$work/ld"
tar -C "$work/unpacked" -xzf "$work/made/vkgmm-bundle.tar.gz"
rm -rf "$work/made"  # nothing may be read from where it was made
bundle=$work/unpacked/vkgmm-bundle
for f in run.sh BUNDLE_INFO.txt bin/vkgmm bin/test_device bin/test_host lib/libvulkan.so.1 \
         lib/libGLdispatch.so.0 lib/libGLX.so.0 lib/libOpenGL.so.0 lib/libEGL.so.1 \
         layers/VkLayer_khronos_validation.json layers/libVkLayer_khronos_validation.so; do
  [ -e "$bundle/$f" ] || fail "the bundle has no $f"
done
for f in "$bundle"/lib/*; do  # glibc and the C++ runtime are the machine's
  case ${f##*/} in libc.so*|libm.so*|ld-linux*|libpthread*|libdl.so*|librt.so*|libstdc++*|libgcc_s*)
    fail "the bundle carries ${f##*/}" ;;
  esac
done
du -h "$work/unpacked" | tail -1

step "run.sh info (RADV's null GPUs and an added driver in the environment must not be picked)"
run LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/ld/info" RADV_FORCE_FAMILY=navi21 \
  VK_ADD_DRIVER_FILES=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json -- info >"$work/info.txt" 2>"$work/info.err" \
  || { cat "$work/info.txt" "$work/info.err"; fail "run.sh info"; }
grep -q "Vulkan driver: .*lvp_icd" "$work/info.err" || { cat "$work/info.err"; fail "lavapipe's manifest not chosen"; }
grep -q "^name: *llvmpipe" "$work/info.txt" || { cat "$work/info.txt"; fail "info is not of lavapipe"; }

step "run.sh test, a subset (test_host's corpus replay, one gmm on the device with validation)"
filter='DeviceTest.GmmExistingOutInPlace:FuzzReplay.*'
run LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/ld/test" -- test --gtest_filter="$filter" >"$work/test.log" 2>&1 \
  || { cat "$work/test.log"; fail "run.sh test"; }
results=$work/cwd/vkgmm-results
grep -q '"tests": 3,' "$results/test_host.json" || fail "test_host did not run the 3 corpus replays"
grep -q '"tests": 1,' "$results/test_device.json" || fail "test_device did not run its one test"
grep -q '"failures": 0,' "$results/test_device.json" || fail "test_device failed"

step "each process: the bundle's loader, at most one driver; the tests: the bundle's validation layer"
loaders=0
for f in "$work"/ld/*; do
  inits=$(grep -o 'calling init: [^ ]*' "$f" | sed 's/calling init: //' || true)
  grep -q 'libvulkan\.so' <<<"$inits" || continue
  loaders=$((loaders + 1))
  other=$(grep 'libvulkan\.so' <<<"$inits" | grep -v "^$bundle/lib/libvulkan\.so\.1$" || true)
  [ -z "$other" ] || fail "a process loaded $other"
  [ "$(grep -c '/libvulkan_[^/]*\.so$' <<<"$inits" || true)" -le 1 ] \
    || fail "a process loaded several drivers: $(grep '/libvulkan_' <<<"$inits" | tr '\n' ' ')"
  if grep -q 'initialize program: .*/bin/test_device' "$f"; then
    grep -q "^$bundle/layers/.*libVkLayer_khronos_validation\.so$" <<<"$inits" \
      || fail "test_device did not load the bundle's validation layer"
    grep -q '/libvulkan_lvp\.so$' <<<"$inits" || fail "test_device did not run on lavapipe"
  fi
done
[ "$loaders" -ge 3 ] || fail "only $loaders processes loaded a Vulkan loader"

step "a driver named by the user is kept (a missing one fails, nothing else is tried)"
if run VK_DRIVER_FILES=/nonexistent/icd.json -- info >"$work/named.log" 2>&1; then
  cat "$work/named.log"; fail "info ran with a driver that does not exist"
fi

step "run.sh all: info, a tiny bench as JSON, a test subset"
run -- all "$work/all" --m 96 --k 64 --n 80 --groups 5 --reps 2 --warmup 1 -- --gtest_filter="$filter" \
  >"$work/all.log" 2>&1 || { cat "$work/all.log"; fail "run.sh all"; }
for s in info bench test_host test_device test_embedding; do
  grep -qx "$s 0" "$work/all/exit_codes.txt" || { cat "$work/all/exit_codes.txt"; fail "all: $s"; }
done
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["workloads"][0]["m"] == 96' \
  "$work/all/bench.json" || fail "all: bench.json"
grep -q "^Vulkan driver: .*lvp_icd" "$work/all/machine.txt" || fail "all: machine.txt"

step "run.sh all goes on past failing steps and records each"
if run VK_DRIVER_FILES=/nonexistent/icd.json -- all "$work/failing" --m 8 -- --gtest_filter="$filter" \
  >"$work/failing.log" 2>&1; then
  fail "all succeeded without a driver"
fi
codes=$(tr '\n' ' ' <"$work/failing/exit_codes.txt")
[[ $codes =~ ^info\ [1-9][0-9]*\ bench\ [1-9][0-9]*\ test_host\ 0\ test_device\ [1-9][0-9]*\ test_embedding\ 0\ $ ]] \
  || fail "all's exit codes without a driver: $codes"

step "run.sh's variant runs are ctest's (tests/CMakeLists.txt's TEST_SUFFIX runs of test_device)"
for suffix in $(sed -n 's/.*TEST_SUFFIX "\.\([a-z0-9_]*\)".*/\1/p' "$src/tests/CMakeLists.txt"); do
  grep -q "\"test_device\.$suffix|" "$bundle/run.sh" || fail "run.sh has no test_device.$suffix variant"
done
step "bundle.sh -v PREFIX carries PREFIX's loader and validation layer (here copies of this machine's, renamed by content)"
prefix=$work/prefix
mkdir -p "$prefix/lib/x86_64-linux-gnu" "$prefix/share/vulkan/explicit_layer.d"
loader=$(ldd "$build/vkgmm" | awk '$1 == "libvulkan.so.1" { print $3 }')
cp -L "$loader" "$prefix/lib/x86_64-linux-gnu/libvulkan.so.1"
printf 'prefix copy' >>"$prefix/lib/x86_64-linux-gnu/libvulkan.so.1"  # a file the bundle can only have from PREFIX
cp -L "$bundle/layers/libVkLayer_khronos_validation.so" "$prefix/lib/x86_64-linux-gnu/"
printf 'prefix copy' >>"$prefix/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so"
# The manifest's library_path as a bare name, then as the absolute path of its package (sid's): either way
# the layer is PREFIX's.
for library_path in libVkLayer_khronos_validation.so /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so; do
  sed "s|\"library_path\" *: *\"[^\"]*\"|\"library_path\": \"$library_path\"|" "$bundle/layers/VkLayer_khronos_validation.json" \
    >"$prefix/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"
  "$src/scripts/bundle.sh" -o "$work/prefixed.tar.gz" -v "$prefix" "$build" >"$work/prefixed.log" 2>&1 \
    || { cat "$work/prefixed.log"; fail "bundle.sh -v ($library_path)"; }
  rm -rf "$work/prefixed" && mkdir -p "$work/prefixed" && tar -C "$work/prefixed" -xzf "$work/prefixed.tar.gz"
  for f in lib/libvulkan.so.1 layers/libVkLayer_khronos_validation.so; do
    [ "$(tail -c 11 "$work/prefixed/vkgmm-bundle/$f")" = "prefix copy" ] || fail "-v ($library_path): $f is not PREFIX's"
  done
  grep -q "libvulkan.so.1 *from $prefix" "$work/prefixed/vkgmm-bundle/BUNDLE_INFO.txt" \
    || { cat "$work/prefixed/vkgmm-bundle/BUNDLE_INFO.txt"; fail "-v: BUNDLE_INFO does not name PREFIX's loader"; }
done
echo "bundle: ok"
