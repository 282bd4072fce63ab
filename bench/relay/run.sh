#!/usr/bin/env bash
# The relay tier on virtual time (bench/README.md, "Relay tier, virtual time"): clients calling Redis
# directly against clients through relays, one budget, a 30 s outage, for each fleet size.
# Usage: bash bench/relay/run.sh [RelayStorm options], e.g. --sizes 1000,10000,100000 --name relay27
# Builds in the reactor (never mvn install) and runs io.retrybudget.bench.relay.RelayStorm.
set -euo pipefail
cd "$(dirname "$0")/../.."
./mvnw -B -q -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/bench/target/cp.txt"
exec java -Xmx${RELAY_HEAP:-6g} -XX:+UseParallelGC -cp "bench/target/classes:$(cat bench/target/cp.txt)" \
  io.retrybudget.bench.relay.RelayStorm --out-dir bench/results/relay "$@"
