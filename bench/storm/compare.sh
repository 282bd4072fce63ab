#!/usr/bin/env bash
# The fleet storm, side by side: the same scenario on two designs of the budget, one run after the
# other in one session, with one harness (this tree's bench/.../storm package) for both.
#
#   old: a commit (default bbd68ec, main before issue 17), checked out in a temporary clone under
#        /tmp, this tree's storm package copied over its own, built in the clone's own reactor
#        (-o, never `mvn install`) and run from the clone's target/classes + dependency classpath;
#   new: this working tree as it is (uncommitted changes included), built in its own reactor;
#        or, with --new COMMIT, another commit in a second temporary clone (e.g. --new pace).
#
# For each size (and rate) it runs old, then new, then draws the two-design chart:
#   <out-dir>/<name>-<clients>-r<rate>-{old,new}.csv, -redis.csv, -summary.txt, -run.properties, .png
#   <out-dir>/<name>-<clients>-r<rate>.png          retries/s and per-second ratio, old vs new
#   <out-dir>/<name>-<clients>-r<rate>-summary.md   the issue-17 table rows of both
#   <out-dir>/<name>-summary.md                     every size's rows in one table, with `uptime`
#
# Usage (from anywhere; paths are relative to this tree's root):
#   bash bench/storm/compare.sh [--old COMMIT] [--new COMMIT] [--sizes 1000,5000,10000] [--rates 2]
#        [--healthy-seconds 5] [--outage-seconds 30] [--designs old,new] [--out-dir bench/results/storm-scale]
#        [--name storm17] [--keep-clones] [-- extra StormSimulator options]
set -euo pipefail

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$ROOT"
OLD=bbd68ec
NEW=
SIZES=1000,5000,10000
RATES=2
HEALTHY=5
OUTAGE=30
DESIGNS=old,new
OUT_DIR=bench/results/storm-scale
NAME=storm17
KEEP=0
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --old) OLD=$2; shift 2 ;;
    --new) NEW=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --healthy-seconds) HEALTHY=$2; shift 2 ;;
    --outage-seconds) OUTAGE=$2; shift 2 ;;
    --designs) DESIGNS=$2; shift 2 ;;
    --out-dir) OUT_DIR=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --keep-clones) KEEP=1; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
case ",$DESIGNS," in *,old,*|*,new,*) ;; *) echo "--designs must name old and/or new" >&2; exit 2 ;; esac
mkdir -p "$OUT_DIR"
WORK=$(mktemp -d /tmp/storm-compare.XXXXXX)
cleanup() {
  if [ "$KEEP" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
REPO=$(git rev-parse --path-format=absolute --git-common-dir)
HARNESS_REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- bench/src/main/java/io/retrybudget/bench/storm || echo '+uncommitted')"

# a temporary clone at COMMIT in DIR, with this tree's storm harness over its own
clone_at() {
  local rev=$1 dir=$2
  git clone -q "$REPO" "$dir"
  local sha
  sha=$(git -C "$dir" rev-parse --verify -q "$rev^{commit}" || git -C "$dir" rev-parse --verify -q "origin/$rev^{commit}") \
    || { echo "no commit or branch $rev in $REPO" >&2; exit 2; }
  git -C "$dir" checkout -q --detach "$sha"
  rm -rf "$dir/bench/src/main/java/io/retrybudget/bench/storm"
  mkdir -p "$dir/bench/src/main/java/io/retrybudget/bench/storm"
  cp "$ROOT"/bench/src/main/java/io/retrybudget/bench/storm/*.java "$dir/bench/src/main/java/io/retrybudget/bench/storm/"
}

# builds TREE in its own reactor (offline, no install) and writes TREE/bench/target/storm-cp.txt
build() {
  local tree=$1 log=$2
  echo "building $tree (log: $log)"
  if ! (cd "$tree" && mvn -B -q -o -pl bench -am test-compile org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
      -Dmdep.outputFile="$tree/bench/target/storm-cp.txt") >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "build of $tree failed" >&2
    exit 1
  fi
  # the reactor's own modules must come from this tree, never from ~/.m2
  if tr ':' '\n' <"$tree/bench/target/storm-cp.txt" | grep -q '/\.m2/.*/io/retrybudget/'; then
    echo "the classpath of $tree takes io.retrybudget artifacts from ~/.m2: refusing to measure the wrong code" >&2
    exit 1
  fi
  if ! tr ':' '\n' <"$tree/bench/target/storm-cp.txt" | grep -qx "$tree/client-sdk/target/classes"; then
    echo "the classpath of $tree does not hold $tree/client-sdk/target/classes" >&2
    exit 1
  fi
}

declare -A TREE LABEL
if [[ ",$DESIGNS," == *,old,* ]]; then
  clone_at "$OLD" "$WORK/old"
  TREE[old]="$WORK/old"
  LABEL[old]="old $(git -C "$WORK/old" rev-parse --short HEAD)"
  build "$WORK/old" "$WORK/build-old.log"
fi
if [[ ",$DESIGNS," == *,new,* ]]; then
  if [ -n "$NEW" ]; then
    clone_at "$NEW" "$WORK/new"
    TREE[new]="$WORK/new"
    LABEL[new]="new $(git -C "$WORK/new" rev-parse --short HEAD)"
  else
    TREE[new]="$ROOT"
    LABEL[new]="new $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- client-sdk lua || echo '+uncommitted')"
  fi
  build "${TREE[new]}" "$WORK/build-new.log"
fi
# the chart and the tables are drawn by the harness of whichever tree was built
DRAW=new
[ -n "${TREE[new]:-}" ] || DRAW=old

SUMMARY="$OUT_DIR/$NAME-summary.md"
UPTIMES="$WORK/uptimes.txt"
: >"$UPTIMES"
ROWS="$WORK/rows.md"
: >"$ROWS"
START=$(date -u +%FT%TZ)

run_one() {
  local design=$1 clients=$2 rate=$3 prefix=$4
  local tree=${TREE[$design]}
  local up
  up=$(uptime)
  echo "$(date -u +%T) $design $clients clients x $rate/s: uptime before: $up" | tee -a "$UPTIMES" >&2
  java -Djava.awt.headless=true -cp "$tree/bench/target/classes:$(cat "$tree/bench/target/storm-cp.txt")" \
    io.retrybudget.bench.storm.StormSimulator --strategies fleet --clients "$clients" --rate-per-client "$rate" \
    --healthy-seconds "$HEALTHY" --outage-seconds "$OUTAGE" --label "${LABEL[$design]}" --out "$prefix" "${EXTRA[@]}" \
    >"$WORK/run-$design-$clients-$rate.log" 2>&1 || { tail -40 "$WORK/run-$design-$clients-$rate.log" >&2; exit 1; }
  local row pace
  row=$(sed -n '/^| clients/,/^per-second ratio over/p' "$prefix-summary.txt" | sed -n '3p')
  pace=$(sed -n 's/^  harness kept pace: \([A-Z]*\) (\([0-9]*\) of .* p99 tick lag \([0-9,]*\) us.*/\1 (\2 s off pace, p99 lag \3 us)/p' "$prefix-summary.txt")
  echo "$row ${pace:-?} |"
}

IFS=, read -r -a SIZE_LIST <<<"$SIZES"
IFS=, read -r -a RATE_LIST <<<"$RATES"
IFS=, read -r -a DESIGN_LIST <<<"$DESIGNS"
for rate in "${RATE_LIST[@]}"; do
  for clients in "${SIZE_LIST[@]}"; do
    base="$OUT_DIR/$NAME-$clients-r$rate"
    for design in "${DESIGN_LIST[@]}"; do
      row=$(run_one "$design" "$clients" "$rate" "$base-$design")
      echo "| ${LABEL[$design]} | $rate | ${row#| }" | tee -a "$ROWS"
    done
    if [ -n "${TREE[old]:-}" ] && [ -n "${TREE[new]:-}" ]; then
      java -Djava.awt.headless=true -cp "${TREE[$DRAW]}/bench/target/classes:$(cat "${TREE[$DRAW]}/bench/target/storm-cp.txt")" \
        io.retrybudget.bench.storm.StormSimulator --mode compare --old "$base-old" --new "$base-new" \
        --old-label "${LABEL[old]}" --new-label "${LABEL[new]}" --out "$base" >"$WORK/compare-$clients-$rate.log" 2>&1 \
        || { cat "$WORK/compare-$clients-$rate.log" >&2; exit 1; }
      echo "wrote $base.png, $base-summary.md"
    fi
  done
done

{
  echo "# Fleet storm, $DESIGNS (issue 17)"
  echo
  echo "\`bash bench/storm/compare.sh --old $OLD${NEW:+ --new $NEW} --sizes $SIZES --rates $RATES --healthy-seconds $HEALTHY --outage-seconds $OUTAGE --designs $DESIGNS --name $NAME${EXTRA[*]:+ -- ${EXTRA[*]}}\`"
  echo
  echo "From $START to $(date -u +%FT%TZ); harness: the storm package of $HARNESS_REV; $(nproc) CPUs, $(java -version 2>&1 | head -1)."
  echo "Each size: $HEALTHY s healthy, $OUTAGE s total outage, $HEALTHY s healthy; ratio 0.10 and floor 10 retries/s for the"
  echo "whole fleet unless the extra options say otherwise; one RedisBudgetClient per 1,000 clients; fresh redis-server per run."
  echo "The machine is shared with other builds: see the load averages below, and the harness lines in each -summary.txt."
  echo "\"harness kept pace\": NO means the simulated fleet itself was starved of CPU (a second sent first attempts more"
  echo "than 10 % off the offered rate, or 2 ms ticks started late by more than 50 ms at p99): such a row measures the machine."
  echo
  echo "| design | requests/s per client | clients | per-second ratio min–max | mean ratio | script calls/s healthy | storm | Redis CPU | harness kept pace |"
  echo "|---|---:|---:|---|---|---:|---:|---|---|"
  cat "$ROWS"
  echo
  echo "Load average before each run (\`uptime\`):"
  echo
  sed 's/^/    /' "$UPTIMES"
  for rate in "${RATE_LIST[@]}"; do
    for clients in "${SIZE_LIST[@]}"; do
      base="$OUT_DIR/$NAME-$clients-r$rate"
      [ -f "$base-summary.md" ] && echo && echo "Chart: $(basename "$base").png, details: $(basename "$base")-summary.md"
    done
  done
} >"$SUMMARY"
echo "wrote $SUMMARY"
cat "$SUMMARY"
