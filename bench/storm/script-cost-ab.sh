#!/usr/bin/env bash
# The scripts' cost inside Redis, two versions side by side: usec_per_call of INFO commandstats for
# EVALSHA while redis-benchmark calls budget.lua (a permit request that is granted, and a count-only
# flush) and status.lua, on a budget whose 10 s window fills all 11 buckets during the run. The two
# versions alternate, ROUNDS times each, each round on a fresh redis-server, so a busy neighbour
# hits both alike; the medians and every round's figure and `uptime` are printed. Also the commands
# one call runs inside Redis (INFO commandstats of the last new round, per budget.lua call).
#
#   bash bench/storm/script-cost-ab.sh                 # lua/ of this tree against bbd68ec (before issue 17)
#   OLD=<commit> ROUNDS=5 N=200000 bash bench/storm/script-cost-ab.sh
#
# Redis is pinned to CPU 1 and redis-benchmark to CPU 0 (REDIS_CPU / BENCH_CPU); run from anywhere.
set -euo pipefail
ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$ROOT"
OLD=${OLD:-bbd68ec}; ROUNDS=${ROUNDS:-5}; N=${N:-100000}; CONNS=${CONNS:-8}; PORT=${REDIS_PORT:-6397}
REDIS_CPU=${REDIS_CPU:-1}; BENCH_CPU=${BENCH_CPU:-0}
WORK=$(mktemp -d /tmp/script-cost-ab.XXXXXX)
PID=
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/old" "$WORK/new"
git show "$OLD:lua/budget.lua" >"$WORK/old/budget.lua"
git show "$OLD:lua/status.lua" >"$WORK/old/status.lua"
bash lua/assemble.sh budget.lua >"$WORK/new/budget.lua"   # the fragments put in, as LuaScript does
bash lua/assemble.sh status.lua >"$WORK/new/status.lua"
R="redis-cli -p $PORT"
P='rb:v2:'
CFG="${P}{cost}:cfg"; WIN="${P}{cost}:win"; CLI="${P}{cost}:clients"; IDX="${P}index"; PACE="${P}{cost}:pace"

bench() { # prints usec_per_call of EVALSHA for one redis-benchmark run of "$@"
  $R config resetstat >/dev/null
  taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" -n "$N" -c "$CONNS" "$@" >/dev/null 2>&1
  $R info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),usec=[0-9]*,usec_per_call=\([0-9.]*\).*/\2/p'
}

round() { # version -> "grant flush status" usec per call
  local dir=$WORK/$1
  taskset -c "$REDIS_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
  PID=$!
  for _ in $(seq 50); do $R ping >/dev/null 2>&1 && break; sleep 0.1; done
  local b s grant flush status
  b=$($R script load "$(cat "$dir/budget.lua")"); s=$($R script load "$(cat "$dir/status.lua")")
  # a permit request (count 1 first attempt, ask 1), floor 1,000,000/s so that every one is granted
  grant=$(bench EVALSHA "$b" 5 "$CFG" "$WIN" "$CLI" "$IDX" "$PACE" '' 1 1 0 1 1 100000 10 1000000 enforce)
  # a flush: count 1 first attempt, ask nothing
  flush=$(bench EVALSHA "$b" 5 "$CFG" "$WIN" "$CLI" "$IDX" "$PACE" '' 1 1 0 0 0 100000 10 1000000 enforce)
  status=$(bench EVALSHA "$s" 3 "$CFG" "$WIN" "$PACE" 100000 10 10 enforce)
  if [ "$1" = new ]; then
    $R config resetstat >/dev/null
    taskset -c "$BENCH_CPU" redis-benchmark -p "$PORT" -n 10000 -c 1 EVALSHA "$b" 5 "$CFG" "$WIN" "$CLI" "$IDX" "$PACE" \
      '' 1 1 0 1 1 100000 10 1000000 enforce >/dev/null 2>&1
    $R info commandstats | grep '^cmdstat_' | grep -v '^cmdstat_config' >"$WORK/commands.txt"
  fi
  kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
  echo "$grant $flush $status"
}

echo "# script cost, old $OLD against new (lua/ of $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- lua || echo '+uncommitted'))"
echo "# $(date -u +%FT%TZ); $(redis-server --version | cut -d' ' -f3); redis-benchmark -n $N -c $CONNS; $(nproc) CPUs; Redis on CPU $REDIS_CPU"
echo "# usec per EVALSHA inside Redis (INFO commandstats): budget.lua permit request (granted), budget.lua flush (count only), status.lua"
printf '%-6s %-5s %10s %10s %10s   %s\n' round design grant flush status uptime
declare -A ALL
for i in $(seq "$ROUNDS"); do
  for d in old new; do
    up=$(uptime | sed 's/.*load average: //')
    read -r g f s <<<"$(round "$d")"
    printf '%-6s %-5s %10s %10s %10s   load %s\n' "$i" "$d" "$g" "$f" "$s" "$up"
    ALL[$d-grant]+="$g "; ALL[$d-flush]+="$f "; ALL[$d-status]+="$s "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo
echo "median usec per call (new / old):"
for k in grant flush status; do
  o=$(echo "${ALL[old-$k]}" | median); n=$(echo "${ALL[new-$k]}" | median)
  printf '  %-7s old %7s  new %7s  (%sx)\n' "$k" "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN {printf "%.2f", a / b}')"
done
echo
echo "commands one budget.lua permit request runs inside Redis (new, 10,000 calls, -c 1):"
awk -F'[:=,]' '{sub(/^cmdstat_/, "", $1); printf "  %-16s %6.2f per call\n", $1, $3 / 10000}' "$WORK/commands.txt"
