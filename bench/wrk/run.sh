#!/usr/bin/env bash
# Coordinator HTTP benchmark: wrk against GET /v1/budgets/{name} and POST /v1/budgets/{name}/retries,
# side by side with redis-benchmark on EVALSHA of the same scripts (budget.lua, status.lua), same Redis.
# Run from the repository root after: mvn -q -B -pl coordinator -am package -DskipTests
# Pinning on a 2-core machine (override with the variables below):
#   redis-server  core 1      coordinator (java)  core 0
#   wrk           core 1 (shares Redis's core; the coordinator keeps core 0 to itself)
#   redis-benchmark  core 0 (the coordinator is idle then) and, for comparison, core 1 (beside Redis, as wrk)
set -euo pipefail
REDIS_PORT=${REDIS_PORT:-6390}; HTTP_PORT=${HTTP_PORT:-8091}; TOKEN=${COORDINATOR_TOKEN:-bench}
REDIS_CPU=${REDIS_CPU:-1}; COORD_CPU=${COORD_CPU:-0}; WRK_CPU=${WRK_CPU:-1}
DURATION=${DURATION:-20s}; CONNS=${CONNS:-32}; WARMUP=${WARMUP:-10s}; N=${N:-200000}
OUT=${OUT:-bench/results/wrk}
mkdir -p "$(dirname "$OUT")"
LOG="$OUT.txt"; : > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }
URL=http://127.0.0.1:$HTTP_PORT
RC="redis-cli -p $REDIS_PORT"

taskset -c "$REDIS_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT-redis.log" 2>&1 &
REDIS_PID=$!
COORD_PID=
cleanup() {
  [ -n "$COORD_PID" ] && kill "$COORD_PID" 2>/dev/null && wait "$COORD_PID" 2>/dev/null || true
  kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do $RC ping >/dev/null 2>&1 && break; sleep 0.1; done

REDIS_URL=redis://127.0.0.1:$REDIS_PORT COORDINATOR_PORT=$HTTP_PORT COORDINATOR_TOKEN=$TOKEN \
  taskset -c "$COORD_CPU" java -jar coordinator/target/coordinator.jar >"$OUT-coordinator.log" 2>&1 &
COORD_PID=$!
for _ in $(seq 100); do curl -sf "$URL/health/ready" >/dev/null && break; sleep 0.2; done

say "# bench/wrk/run.sh $(date -u +%FT%TZ); $(nproc) CPUs; $(redis-server --version | cut -d' ' -f3); $(java -version 2>&1 | head -1); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)"
say "# pinning: redis-server cpu $REDIS_CPU, coordinator cpu $COORD_CPU, wrk cpu $WRK_CPU; wrk -t1 -c$CONNS -d$DURATION"
say "PUT bench: $(curl -s -X PUT -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"ratio": 1.0, "min_retries_per_second": 1000000, "window_seconds": 3600, "mode": "enforce"}' "$URL/v1/budgets/bench")"
# one counted first attempt, so the window key exists as well
curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"count": 1}' "$URL/v1/budgets/bench/requests"
say "GET bench: $(curl -s "$URL/v1/budgets/bench")"

codes() { curl -s "$URL/metrics" | grep '^vertx_http_server_requests_total' | grep "$1" ; }
evalsha() { $RC info commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*' | cut -d= -f2; }

say "## warm-up: GET and POST, $WARMUP each (not recorded)"
taskset -c "$WRK_CPU" wrk -t1 -c"$CONNS" -d"$WARMUP" "$URL/v1/budgets/bench" >/dev/null
COORDINATOR_TOKEN=$TOKEN taskset -c "$WRK_CPU" wrk -t1 -c"$CONNS" -d"$WARMUP" -s bench/wrk/post-retries.lua "$URL/v1/budgets/bench/retries" >/dev/null

say "## GET /v1/budgets/bench"
$RC config resetstat >/dev/null
say "\$ taskset -c $WRK_CPU wrk -t1 -c$CONNS -d$DURATION --latency $URL/v1/budgets/bench"
taskset -c "$WRK_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency "$URL/v1/budgets/bench" | tee -a "$LOG"
say "EVALSHA calls in Redis during the run: $(evalsha)"

say "## POST /v1/budgets/bench/retries {\"count\": 1}"
before=$(codes 'method="POST"' || true)
$RC config resetstat >/dev/null
say "\$ taskset -c $WRK_CPU wrk -t1 -c$CONNS -d$DURATION --latency -s bench/wrk/post-retries.lua $URL/v1/budgets/bench/retries"
COORDINATOR_TOKEN=$TOKEN taskset -c "$WRK_CPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency -s bench/wrk/post-retries.lua "$URL/v1/budgets/bench/retries" | tee -a "$LOG"
say "EVALSHA calls in Redis during the run: $(evalsha)"
say "POST answers by code, cumulative incl. warm-up (before / after):"
say "$before"; say "--"; say "$(codes 'method="POST"' || true)"
say "GET bench after: $(curl -s "$URL/v1/budgets/bench")"

say "## redis-benchmark, EVALSHA of the same scripts on the same Redis (coordinator idle)"
BSHA=$($RC script load "$(cat lua/budget.lua)"); SSHA=$($RC script load "$(cat lua/status.lua)")
say "budget.lua sha $BSHA, status.lua sha $SSHA"
K="'rb:v1:{bench2}:cfg' 'rb:v1:{bench2}:win' 'rb:v1:{bench2}:clients'"
for cpu in "$COORD_CPU" "$WRK_CPU"; do
  say "\$ taskset -c $cpu redis-benchmark -p $REDIS_PORT -n $N -c $CONNS -P 1 EVALSHA $BSHA 3 $K '' 1 0 0 1 1 100000 3600 1000000 enforce"
  taskset -c "$cpu" redis-benchmark -p "$REDIS_PORT" -n "$N" -c "$CONNS" -P 1 EVALSHA "$BSHA" 3 \
    'rb:v1:{bench2}:cfg' 'rb:v1:{bench2}:win' 'rb:v1:{bench2}:clients' '' 1 0 0 1 1 100000 3600 1000000 enforce 2>&1 \
    | tr '\r' '\n' | grep -A3 -E 'throughput summary|latency summary' | tee -a "$LOG"
  say "\$ taskset -c $cpu redis-benchmark -p $REDIS_PORT -n $N -c $CONNS -P 1 EVALSHA $SSHA 2 rb:v1:{bench}:cfg rb:v1:{bench}:win 100000 10 10 enforce"
  taskset -c "$cpu" redis-benchmark -p "$REDIS_PORT" -n "$N" -c "$CONNS" -P 1 EVALSHA "$SSHA" 2 \
    'rb:v1:{bench}:cfg' 'rb:v1:{bench}:win' 100000 10 10 enforce 2>&1 \
    | tr '\r' '\n' | grep -A3 -E 'throughput summary|latency summary' | tee -a "$LOG"
done
say "bench2 window after: $($RC evalsha "$SSHA" 2 'rb:v1:{bench2}:cfg' 'rb:v1:{bench2}:win' 100000 10 10 enforce | tr '\n' ' ')"
