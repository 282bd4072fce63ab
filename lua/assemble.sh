#!/usr/bin/env bash
# Prints a script of lua/ as Redis runs it: every line "--#include NAME" replaced by the text of
# lua/fragments/NAME (README.md, "Fragments"). Byte for byte what the SDK's LuaScript sends, so
# the SHA-1 is the same. Usage: lua/assemble.sh budget.lua | redis-cli -x script load
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
script=${1:?usage: $0 SCRIPT.lua}
[ -f "$dir/$script" ] || { echo "no such script: $dir/$script" >&2; exit 1; }
awk -v frags="$dir/fragments" '
  /^--#include [A-Za-z0-9._-]+\.lua$/ {
    f = frags "/" $2
    n = 0
    while ((getline line < f) > 0) { print line; n++ }
    close(f)
    if (n == 0) { print "empty or missing fragment: " f > "/dev/stderr"; exit 1 }
    next
  }
  { print }
' "$dir/$script"
