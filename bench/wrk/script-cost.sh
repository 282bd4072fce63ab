#!/usr/bin/env bash
# Cost of the budget scripts inside Redis: usec_per_call of INFO commandstats while redis-benchmark
# calls EVALSHA of budget.lua and of status.lua on a window of 10 s (buckets of 1 s, so all 11 slots
# of the ring fill during the run). Starts its own redis-server; run from the repository root.
#   bash bench/wrk/script-cost.sh                      # the scripts in lua/
#   LUA_DIR=/tmp/old-lua PREFIX=rb:v1: bash bench/wrk/script-cost.sh   # another version, e.g. from git
# (git show <commit>:lua/budget.lua > /tmp/old-lua/budget.lua, and the same for status.lua; for a
# version with lua/fragments/: git archive <commit> lua | tar -x -C /tmp/old, LUA_DIR=/tmp/old/lua)
set -euo pipefail
PORT=${REDIS_PORT:-6398}; N=${N:-100000}; CONNS=${CONNS:-8}; LUA_DIR=${LUA_DIR:-lua}; PREFIX=${PREFIX:-rb:v2:}
REDIS_CPU=${REDIS_CPU:-1}; BENCH_CPU=${BENCH_CPU:-0}
taskset -c "$REDIS_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null || true' EXIT
R="redis-cli -p $PORT"
for _ in $(seq 50); do $R ping >/dev/null 2>&1 && break; sleep 0.1; done
# a script as Redis runs it: lua/assemble.sh puts the shared fragments in (older versions have none)
text() { if [ -f "$LUA_DIR/assemble.sh" ]; then bash "$LUA_DIR/assemble.sh" "$1"; else cat "$LUA_DIR/$1"; fi; }
B=$($R script load "$(text budget.lua)"); S=$($R script load "$(text status.lua)")
CFG="${PREFIX}{cost}:cfg"; WIN="${PREFIX}{cost}:win"; CLI="${PREFIX}{cost}:clients"; IDX="${PREFIX}index"
PACE="${PREFIX}{cost}:pace" # budget.lua since issue 17 (an older budget.lua ignores a fifth key)
echo "# script cost $(date -u +%FT%TZ); $(redis-server --version | cut -d' ' -f3); scripts from $LUA_DIR; redis-benchmark -n $N -c $CONNS"
run() {
  $R config resetstat >/dev/null
  taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" -n "$N" -c "$CONNS" "$@" 2>&1 | tr '\r' '\n' | grep 'throughput summary' | sed 's/^ *//'
  $R info commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*,usec=[0-9]*,usec_per_call=[0-9.]*'
}
echo "budget.lua (count 1 first attempt, ask 1 permit; window 10 s, floor 1,000,000/s so every call is granted):"
run EVALSHA "$B" 5 "$CFG" "$WIN" "$CLI" "$IDX" "$PACE" '' 1 1 0 1 1 100000 10 1000000 enforce
echo "status.lua:"
run EVALSHA "$S" 3 "$CFG" "$WIN" "$PACE" 100000 10 10 enforce
