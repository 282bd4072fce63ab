#!/usr/bin/env bash
# Coordinator HTTP benchmark: wrk against GET /v1/budgets/{name} and POST /v1/budgets/{name}/retries
# at several connection counts, side by side with redis-benchmark on EVALSHA of the same scripts
# (status.lua for GET, budget.lua for POST) on the same Redis, then a summary table.
# Run from the repository root after: ./mvnw -q -B -pl coordinator -am package -DskipTests
# Pinning on a 2-core machine (override with the variables below):
#   redis-server  core 1      coordinator (java)  core 0
#   wrk           core 1 (shares Redis's core; the coordinator keeps core 0 to itself)
#   redis-benchmark  core 0 (the coordinator's core; the coordinator is idle then)
# Nothing is cached: every HTTP request runs one script in Redis (checked: EVALSHA calls = requests).
set -euo pipefail
REDIS_PORT=${REDIS_PORT:-6390}; HTTP_PORT=${HTTP_PORT:-8091}; TOKEN=${COORDINATOR_TOKEN:-bench}
# the management listener (builds before it ignore the variable); never the default 9091 another run may hold
MANAGEMENT_PORT=${MANAGEMENT_PORT:-$((HTTP_PORT + 100))}
REDIS_CPU=${REDIS_CPU:-1}; COORD_CPU=${COORD_CPU:-0}; WRK_CPU=${WRK_CPU:-1}
DURATION=${DURATION:-20s}; CONNS=${CONNS:-4 8 16 32}; WARMUP=${WARMUP:-30s}; N=${N:-200000}
OUT=${OUT:-bench/results/coordinator-http/wrk}
JAR=${JAR:-coordinator/target/coordinator.jar}   # another build's jar, for before/after (bench/wrk/before-after.sh)
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

REDIS_URL=redis://127.0.0.1:$REDIS_PORT COORDINATOR_PORT=$HTTP_PORT COORDINATOR_MANAGEMENT_PORT=$MANAGEMENT_PORT COORDINATOR_TOKEN=$TOKEN \
  taskset -c "$COORD_CPU" java -XX:+ExitOnOutOfMemoryError ${JAVA_OPTS:-} -jar "$JAR" >"$OUT-coordinator.log" 2>&1 &
COORD_PID=$!
for _ in $(seq 100); do curl -sf "$URL/health/ready" >/dev/null && break; sleep 0.2; done

say "# bench/wrk/run.sh $(date -u +%FT%TZ); $(nproc) CPUs; $(redis-server --version | cut -d' ' -f3); $(java -version 2>&1 | head -1); $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2); JAVA_OPTS='${JAVA_OPTS:-}'; jar $JAR"
say "# pinning: redis-server cpu $REDIS_CPU, coordinator cpu $COORD_CPU, wrk cpu $WRK_CPU, redis-benchmark cpu $COORD_CPU; wrk -t1 -d$DURATION; connections: $CONNS"
say "PUT bench: $(curl -s -X PUT -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d '{"ratio": 1.0, "min_retries_per_second": 1000000, "window_seconds": 3600, "mode": "enforce"}' "$URL/v1/budgets/bench")"
# one counted first attempt, so the window key exists as well
curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"count": 1}' "$URL/v1/budgets/bench/requests"
say "GET bench: $(curl -s "$URL/v1/budgets/bench")"

evalsha() { $RC info commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*' | cut -d= -f2; }
# wrk's "Requests/sec" and its 50% / 99% latency in ms
rps() { awk '/^Requests\/sec/ {printf "%.0f", $2}' "$1"; }
pct() { awk -v p="$2%" '$1 == p { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
  f = (u == "us") ? 0.001 : (u == "s") ? 1000 : 1; printf "%.2f", v * f }' "$1"; }
errors() { grep -E 'Non-2xx|Socket errors' "$1" | tr -s ' ' | tr '\n' ' ' || true; }

MAXC=$(echo "$CONNS" | tr ' ' '\n' | sort -n | tail -1)
say "## warm-up (JIT): GET and POST, $WARMUP each at $MAXC connections (not recorded)"
taskset -c "$WRK_CPU" wrk -t1 -c"$MAXC" -d"$WARMUP" "$URL/v1/budgets/bench" >/dev/null
COORDINATOR_TOKEN=$TOKEN taskset -c "$WRK_CPU" wrk -t1 -c"$MAXC" -d"$WARMUP" -s bench/wrk/post-retries.lua "$URL/v1/budgets/bench/retries" >/dev/null

BSHA=$($RC script load "$(cat lua/budget.lua)"); SSHA=$($RC script load "$(cat lua/status.lua)")
TMP=$(mktemp -d); trap 'cleanup; rm -rf "$TMP"' EXIT
ROWS=()
for c in $CONNS; do
  say "## $c connections"
  $RC config resetstat >/dev/null
  say "\$ taskset -c $WRK_CPU wrk -t1 -c$c -d$DURATION --latency $URL/v1/budgets/bench"
  taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"$DURATION" --latency "$URL/v1/budgets/bench" | tee "$TMP/get" | tee -a "$LOG"
  say "EVALSHA calls in Redis during the run: $(evalsha)"
  $RC config resetstat >/dev/null
  say "\$ taskset -c $WRK_CPU wrk -t1 -c$c -d$DURATION --latency -s bench/wrk/post-retries.lua $URL/v1/budgets/bench/retries"
  COORDINATOR_TOKEN=$TOKEN taskset -c "$WRK_CPU" wrk -t1 -c"$c" -d"$DURATION" --latency -s bench/wrk/post-retries.lua "$URL/v1/budgets/bench/retries" | tee "$TMP/post" | tee -a "$LOG"
  say "EVALSHA calls in Redis during the run: $(evalsha)"
  # redis-benchmark with the coordinator idle, from the coordinator's core, same connection count
  say "\$ taskset -c $COORD_CPU redis-benchmark -p $REDIS_PORT -n $N -c $c EVALSHA $SSHA 3 rb:v2:{bench}:cfg rb:v2:{bench}:win rb:v2:{bench}:pace 100000 10 10 enforce"
  taskset -c "$COORD_CPU" redis-benchmark -p "$REDIS_PORT" -n "$N" -c "$c" EVALSHA "$SSHA" 3 \
    'rb:v2:{bench}:cfg' 'rb:v2:{bench}:win' 'rb:v2:{bench}:pace' 100000 10 10 enforce 2>&1 \
    | tr '\r' '\n' | grep -A3 -E 'throughput summary|latency summary' | tee "$TMP/rs" | tee -a "$LOG"
  say "\$ taskset -c $COORD_CPU redis-benchmark -p $REDIS_PORT -n $N -c $c EVALSHA $BSHA 5 rb:v2:{bench2}:cfg rb:v2:{bench2}:win rb:v2:{bench2}:clients rb:v2:index rb:v2:{bench2}:pace '' 1 0 0 1 1 100000 3600 1000000 enforce"
  # five keys: the index of budget names (a standalone Redis's is rb:v2:index) and the paced balance (lua/README.md)
  taskset -c "$COORD_CPU" redis-benchmark -p "$REDIS_PORT" -n "$N" -c "$c" EVALSHA "$BSHA" 5 \
    'rb:v2:{bench2}:cfg' 'rb:v2:{bench2}:win' 'rb:v2:{bench2}:clients' 'rb:v2:index' 'rb:v2:{bench2}:pace' '' 1 0 0 1 1 100000 3600 1000000 enforce 2>&1 \
    | tr '\r' '\n' | grep -A3 -E 'throughput summary|latency summary' | tee "$TMP/rb" | tee -a "$LOG"
  rs=$(awk '/throughput summary/ {printf "%.0f", $3}' "$TMP/rs"); rb=$(awk '/throughput summary/ {printf "%.0f", $3}' "$TMP/rb")
  rsp99=$(awk 'f {print $5; exit} /avg/ {f=1}' "$TMP/rs")
  g=$(rps "$TMP/get"); gp=$(pct "$TMP/get" 99); p=$(rps "$TMP/post"); pp=$(pct "$TMP/post" 99)
  ratio=$(awk -v a="$g" -v b="$rs" 'BEGIN {printf "%.2f", a / b}')
  met=$(awk -v r="$ratio" -v q="$gp" 'BEGIN {print (r >= 0.25 && q <= 5.0) ? "yes" : "no"}')
  ROWS+=("| $c | $g | $(pct "$TMP/get" 50) | $gp | $p | $pp | $rs | $rsp99 | $rb | $ratio | $met |")
  for f in get post; do e=$(errors "$TMP/$f"); [ -n "$e" ] && say "$f errors: $e"; done
done
say "POST answers by code (all runs, warm-up included): $(curl -s "$URL/metrics" | grep '^vertx_http_server_requests_total' | grep 'method="POST"' | tr '\n' ' ')"
say "GET bench after: $(curl -s "$URL/v1/budgets/bench")"
say ""
say "## summary (ms; target: GET rate >= 0.25 x redis-benchmark status.lua, GET p99 <= 5 ms)"
say "| conns | GET rps | GET p50 | GET p99 | POST rps | POST p99 | redis-bench status.lua rps | its p99 | redis-bench budget.lua rps | GET / status.lua | target met |"
say "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for r in "${ROWS[@]}"; do say "$r"; done
