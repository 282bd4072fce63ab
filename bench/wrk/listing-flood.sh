#!/usr/bin/env bash
# The unauthenticated listing flood of the review (/v1/budgets with 1,000 budgets, 8 connections, no
# token) against authenticated permits and the readiness probe, on two builds of the coordinator, one
# after the other on the same machine: permits/s and latency alone, then during the flood; readiness
# probes on the management port during the flood; bytes the coordinator logged.
#   BEFORE=/path/to/other/checkout  (its coordinator/target/coordinator.jar is the baseline)
#   BUDGETS (default 1000), FLOOD_CONNS (8), OUT (bench/results/listing-flood)
# Run from the repository root after: ./mvnw -q -B -o -pl coordinator -am package -DskipTests
set -euo pipefail
BEFORE=${BEFORE:?set BEFORE to a checkout whose coordinator/target/coordinator.jar is the baseline}
BUDGETS=${BUDGETS:-1000}; FLOOD_CONNS=${FLOOD_CONNS:-8}; OUT=${OUT:-bench/results/listing-flood}
mkdir -p "$OUT"
# the processes' logs stay out of the results (the old coordinator logs about 600 MB in this run)
LOGS=$(mktemp -d /tmp/listing-flood-logs.XXXXXX)
SUMMARY="$OUT/summary.txt"; : > "$SUMMARY"
say() { echo "$@" | tee -a "$SUMMARY"; }
TOKEN=$(openssl rand -hex 24)
say "# bench/wrk/listing-flood.sh $(date -u +%FT%TZ); $(nproc) CPUs; before: $BEFORE ($(git -C "$BEFORE" rev-parse --short HEAD)); after: $(git rev-parse --short HEAD)"
say "# $BUDGETS budgets, $FLOOD_CONNS connections of GET /v1/budgets without a token; permits: wrk -t1 -c4 -d8s POST /v1/budgets/victim/retries {\"count\":1}"
post_lua=$(mktemp /tmp/flood-post.XXXXXX.lua)
cat > "$post_lua" <<EOF
wrk.method = "POST"
wrk.body   = '{"count":1}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $TOKEN"
EOF

run() { # side jar
  local side=$1 jar=$2 port=18180 mport=18191 rport=18179
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$LOGS/$side-redis.log" 2>&1 &
  local rpid=$!
  for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  REDIS_URL=redis://127.0.0.1:$rport COORDINATOR_PORT=$port COORDINATOR_MANAGEMENT_PORT=$mport COORDINATOR_TOKEN=$TOKEN \
    java -Xmx384m -XX:+ExitOnOutOfMemoryError -jar "$jar" >"$LOGS/$side-coordinator.log" 2>&1 &
  local cpid=$!
  for _ in $(seq 150); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.2; done
  # the budgets to list, and one with room for every permit asked
  python3 - "$port" "$TOKEN" "$BUDGETS" <<'EOF'
import http.client, sys
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
c = None
for i in range(n + 1):
    if i % 90 == 0:
        c = http.client.HTTPConnection("127.0.0.1", port)
    name, body = ("victim", '{"ratio":0.5,"min_retries_per_second":1000000}') if i == n else ("load-%04d" % i, '{"ratio":0.1}')
    c.request("PUT", "/v1/budgets/" + name, body=body, headers=h)
    r = c.getresponse(); r.read()
    if r.status != 200:
        raise SystemExit("PUT %s: %d" % (name, r.status))
EOF
  sleep 2
  say "## $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
  wrk -t1 -c4 -d8s --latency -s "$post_lua" "http://127.0.0.1:$port/v1/budgets/victim/retries" >"$OUT/$side-alone.txt"
  say "permits alone:        $(grep 'Requests/sec' "$OUT/$side-alone.txt" | awk '{print $2}') req/s, p50 $(awk '$1=="50%"{print $2}' "$OUT/$side-alone.txt"), non-2xx $(grep -o 'Non-2xx or 3xx responses: [0-9]*' "$OUT/$side-alone.txt" | awk '{print $NF}')"
  wrk -t1 -c"$FLOOD_CONNS" -d20s "http://127.0.0.1:$port/v1/budgets" >"$OUT/$side-flood.txt" &
  local fpid=$!
  sleep 3
  wrk -t1 -c4 -d8s --latency -s "$post_lua" "http://127.0.0.1:$port/v1/budgets/victim/retries" >"$OUT/$side-during.txt" &
  local ppid=$!
  : >"$OUT/$side-ready.txt"
  for _ in $(seq 10); do
    curl -s -o /dev/null -m 5 -w '%{http_code} %{time_total}\n' "http://127.0.0.1:$mport/health/ready" >>"$OUT/$side-ready.txt" || echo "000 5" >>"$OUT/$side-ready.txt"
    sleep 0.5
  done
  wait "$ppid"; wait "$fpid"
  say "permits during flood: $(grep 'Requests/sec' "$OUT/$side-during.txt" | awk '{print $2}') req/s, p50 $(awk '$1=="50%"{print $2}' "$OUT/$side-during.txt"), non-2xx $(grep -o 'Non-2xx or 3xx responses: [0-9]*' "$OUT/$side-during.txt" | awk '{print $NF}')"
  say "listings:             $(grep 'Requests/sec' "$OUT/$side-flood.txt" | awk '{print $2}') req/s, non-2xx $(grep -o 'Non-2xx or 3xx responses: [0-9]*' "$OUT/$side-flood.txt" | awk '{print $NF}')"
  say "readiness (10 probes, code seconds): $(tr '\n' ';' <"$OUT/$side-ready.txt")"
  kill "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true
  kill "$rpid" 2>/dev/null || true; wait "$rpid" 2>/dev/null || true
  say "coordinator log: $(wc -c <"$LOGS/$side-coordinator.log") bytes, $(grep -c 'Internal stack size exceeded' "$LOGS/$side-coordinator.log" || true) lines naming the full queue"
  rm -f "$LOGS/$side-coordinator.log"
}
run before "$BEFORE/coordinator/target/coordinator.jar"
run after coordinator/target/coordinator.jar
rm -f "$post_lua"; rm -rf "$LOGS"
