#!/usr/bin/env bash
# Every public header compiles on its own for a consumer on C++17 (and the C headers as C99), with
# -Wall -Wextra -Werror -pedantic: no C++20-ism, no missing include, no warning an app's -Werror trips on.
# Also with clang where it is installed: its -Wall holds warnings GCC's lacks (-Wstring-plus-int).
# usage: check_headers.sh <c++ compiler> <c compiler> <include dir holding vkgmm/> [extra -I flags...]
set -euo pipefail
cxx=$1 cc=$2 inc=$3
shift 3
compilers=("$cxx:$cc")
if command -v clang++ >/dev/null && command -v clang >/dev/null; then compilers+=("clang++:clang"); fi
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT
strict=(-Wall -Wextra -Werror -pedantic -fsyntax-only -I"$inc" "$@")
count=0
for h in "$inc"/vkgmm/*.h "$inc"/vkgmm/*.hpp; do
  [ -e "$h" ] || continue
  name=${h##*/}
  # (a declaration after it: ISO C forbids an empty translation unit, which export.h alone would be)
  printf '#include <vkgmm/%s>\ntypedef int vkgmm_header_check;\n' "$name" >"$work/tu.cpp"
  for pair in "${compilers[@]}"; do
    cxx_=${pair%%:*} cc_=${pair##*:}
    "$cxx_" -x c++ -std=c++17 "${strict[@]}" "$work/tu.cpp" || { echo "FAIL: vkgmm/$name as C++17 ($cxx_)"; exit 1; }
    if [ "${name##*.}" = h ]; then
      "$cc_" -x c -std=c99 "${strict[@]}" "$work/tu.cpp" || { echo "FAIL: vkgmm/$name as C99 ($cc_)"; exit 1; }
    fi
  done
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "no headers under $inc/vkgmm"; exit 1; }
echo "public headers: $count compile on their own as C++17 (and the .h files as C99) with: ${compilers[*]}"
