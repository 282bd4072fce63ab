#!/usr/bin/env bash
# The Idempotency-Key guard's cost in throughput: the same payments handler with and without the
# guard, in one process (PaymentsThroughput), loaded by wrk with a new key per request, the two
# alternated round by round; prints each round and the median ratio guarded / bare.
#   bash bench/idem/throughput.sh [rounds=5] [seconds=10] [connections=32]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}; seconds=${2:-10}; conns=${3:-32}
command -v wrk >/dev/null || { echo "wrk not on PATH (apt-get install wrk)"; exit 2; }
./mvnw -B -q -pl bench -am test-compile org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
  -Dmdep.outputFile="$PWD/bench/target/cp.txt" >/dev/null
out=$(mktemp)
java -cp "bench/target/classes:$(cat bench/target/cp.txt)" io.retrybudget.bench.idem.PaymentsThroughput >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 1 300); do grep -q '^guarded=' "$out" && break; sleep 0.1; done
read -r g b < <(sed -n 's/^guarded=\([0-9]*\) bare=\([0-9]*\)$/\1 \2/p' "$out")
echo "# $(date -u +%FT%TZ); $(nproc) CPUs; wrk -t2 -c$conns -d${seconds}s, a new Idempotency-Key per request; load $(cut -d' ' -f1-3 /proc/loadavg)"
# requests/s, and the answers that were not 2xx (a guard that answered 503 is no throughput)
rps() { wrk -t2 -c"$conns" -d"${seconds}s" -s bench/idem/new-key.lua "http://127.0.0.1:$1" \
  | awk '/Non-2xx/ {bad=$5} /Requests\/sec/ {r=$2} END {printf "%s %s\n", r, (bad == "" ? 0 : bad)}'; }
rps "$g" >/dev/null; rps "$b" >/dev/null   # warm-up: the JIT's first pass over both
ratios=()
for r in $(seq 1 "$rounds"); do
  read -r gr gbad < <(rps "$g"); read -r br bbad < <(rps "$b")
  ratio=$(awk -v a="$gr" -v c="$br" 'BEGIN {printf "%.3f", a / c}')
  ratios+=("$ratio")
  echo "round $r: guarded $gr req/s ($gbad not 2xx), bare $br req/s ($bbad not 2xx), ratio $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ratio guarded / bare: " a[int((NR+1)/2)]}'
