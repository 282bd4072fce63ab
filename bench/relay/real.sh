#!/usr/bin/env bash
# The relay tier on real processes (bench/README.md, "Relay tier, real processes"): one redis-server,
# relay processes started from the coordinator's shaded jar as an operator runs it
# (COORDINATOR_MODE=relay), client JVMs of the SDK's RedisBudgetClient; clients calling Redis directly
# against clients through the relays, one budget, a 30 s outage.
# Usage: bash bench/relay/real.sh [RealRelayStorm options], e.g. --clients 2000 --relays 2 --jvms 2
# Builds in the reactor (never mvn install).
set -euo pipefail
cd "$(dirname "$0")/../.."
# SKIP_BUILD=1: run what the last build made (a quiet window is not spent building)
if [ -z "${SKIP_BUILD:-}" ]; then
  ./mvnw -B -q -pl coordinator -am package -DskipTests
  ./mvnw -B -q -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/bench/target/cp.txt"
fi
# the shaded jar (the shade plugin's finalName), never another jar left in target/
JAR=coordinator/target/coordinator.jar
[ -f "$JAR" ] || { echo "no $JAR: build first (without SKIP_BUILD)" >&2; exit 1; }
CP="bench/target/classes:$(cat bench/target/cp.txt)"
java -Xmx512m -XX:+UseSerialGC -Djava.awt.headless=true -cp "$CP" \
  io.retrybudget.bench.relay.RealRelayStorm --coordinator-jar "$JAR" --out-dir bench/results/relay "$@"
# the cost curve: the virtual-time runs (relay27*) and the real runs (relay27-real*) side by side
java -Djava.awt.headless=true -cp "$CP" io.retrybudget.bench.relay.CostCurveChart bench/results/relay \
  relay27,relay27-30k,relay27-3x,relay27-1m,relay27-1m-direct relay27-real-2k,relay27-real-6k,relay27-real \
  bench/results/relay/relay27-cost-curve.png
