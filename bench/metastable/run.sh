#!/usr/bin/env bash
# The metastable-failure experiment (bench/metastable/README.md): builds bench and what it needs in
# the reactor (nothing installed into ~/.m2; what Maven Central serves is downloaded on the first run), then runs every arm side by side, both
# scenarios, with real JVMs, a Vert.x backend and a redis-server. Flags go to MetastableExperiment,
# e.g. --clients 50,300,1000 --arms finagle,grpc,aws --scenarios capacity --name metastable-clients
set -euo pipefail
cd "$(dirname "$0")/../.."
./mvnw -B -q -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/bench/target/metastable-cp.txt"
exec java -Xmx512m ${METASTABLE_JAVA_OPTS:-} -Djava.awt.headless=true -cp "bench/target/classes:$(cat bench/target/metastable-cp.txt)" \
  io.retrybudget.bench.metastable.MetastableExperiment "$@"
