#!/bin/bash
# expect_exit.sh STATUS PATTERN... -- COMMAND [ARG...]: runs the command, shows its output, and passes only
# when it exits with STATUS and each extended regular expression PATTERN matches a line of its output
# (stdout and stderr). ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status: a crash after the
# line would pass.
set -uo pipefail
want="$1"
shift
patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  patterns+=("$1")
  shift
done
if [ $# -lt 2 ]; then
  echo "usage: expect_exit.sh STATUS PATTERN... -- COMMAND [ARG...]" >&2
  exit 2
fi
shift
output="$("$@" 2>&1)"
status=$?
printf '%s\n' "$output"
if [ "$status" -ne "$want" ]; then
  echo "expect_exit.sh: exit status $status, expected $want" >&2
  exit 1
fi
for pattern in "${patterns[@]}"; do
  if ! grep -Eq -- "$pattern" <<<"$output"; then
    echo "expect_exit.sh: no line matches '$pattern'" >&2
    exit 1
  fi
done
