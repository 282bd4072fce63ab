#!/usr/bin/env bash
# Issue 12 measurement: the wrk sweep (run.sh) on two builds of the coordinator, interleaved on the
# same machine in one run (before, after, before, after, ...), then the hostile attacks
# (HostileAttacks, from coordinator/target/test-classes) against each in a -Xmx256m JVM. A build with
# the management listener is probed and scraped there (HostileAttacks -DmanagementPort, which also
# reports a prober of the API port); a build without one ignores COORDINATOR_MANAGEMENT_PORT and is
# probed on its API port, as before.
#   BEFORE=/path/to/other/checkout  (its coordinator/target/coordinator.jar is used)
#   ROUNDS (default 2), CONNS (default "8 32"), DURATION (10s), WARMUP (10s); OUT folder; HOSTILE=0 skips the attacks
# Run from the repository root after: ./mvnw -q -B -pl coordinator -am package -DskipTests && ./mvnw -q -B -pl coordinator test-compile
set -euo pipefail
BEFORE=${BEFORE:?set BEFORE to a checkout whose coordinator/target/coordinator.jar is the baseline}
ROUNDS=${ROUNDS:-2}; OUT=${OUT:-bench/wrk/results}
export CONNS=${CONNS:-8 32} DURATION=${DURATION:-10s} WARMUP=${WARMUP:-10s}
mkdir -p "$OUT"
SUMMARY="$OUT/before-after.txt"; : > "$SUMMARY"
say() { echo "$@" | tee -a "$SUMMARY"; }
say "# bench/wrk/before-after.sh $(date -u +%FT%TZ); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg); before: $BEFORE ($(git -C "$BEFORE" rev-parse --short HEAD)); after: $(git rev-parse --short HEAD) + work tree"
for r in $(seq "$ROUNDS"); do
  for side in before after; do
    jar=coordinator/target/coordinator.jar; [ "$side" = before ] && jar="$BEFORE/coordinator/target/coordinator.jar"
    say "## round $r, $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
    JAR="$jar" OUT="$OUT/wrk-$side-$r" bash bench/wrk/run.sh >/dev/null
    sed -n '/^| conns/,$p' "$OUT/wrk-$side-$r.txt" | tee -a "$SUMMARY"
  done
done

hostile() { # side jar port
  local redis_port=$(( $3 + 1 )) mport=$(( $3 + 10 ))
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/hostile-$1-redis.log" 2>&1 &
  local rpid=$!
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  REDIS_URL=redis://127.0.0.1:$redis_port COORDINATOR_PORT=$3 COORDINATOR_MANAGEMENT_PORT=$mport COORDINATOR_TOKEN=hostile \
    java -Xmx256m -XX:+ExitOnOutOfMemoryError -jar "$2" >"$OUT/hostile-$1-coordinator.log" 2>&1 &
  local cpid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$3/health/live" >/dev/null && break; sleep 0.2; done
  # the management port, when the build has one (curl fails fast on a closed port)
  curl -sf "http://127.0.0.1:$mport/health/live" >/dev/null 2>&1 || mport=$3
  say "## hostile, $1 (load $(cut -d' ' -f1-3 /proc/loadavg))"
  timeout 600 java -DmanagementPort="$mport" -cp coordinator/target/test-classes io.retrybudget.coordinator.HostileAttacks "$3" "$cpid" \
    ${HOSTILE_ARGS:-100000 3000 20000 500} 2>&1 | tee -a "$SUMMARY" || say "(the attack program ended with $?)"
  say "coordinator alive after: $(kill -0 "$cpid" 2>/dev/null && echo yes || echo no)"
  kill "$cpid" 2>/dev/null || true; wait "$cpid" 2>/dev/null || true
  kill "$rpid" 2>/dev/null || true; wait "$rpid" 2>/dev/null || true
}
if [ "${HOSTILE:-1}" = 1 ]; then
  hostile before "$BEFORE/coordinator/target/coordinator.jar" 8093
  hostile after coordinator/target/coordinator.jar 8095
fi
