#!/usr/bin/env bash
# OTLP request latency with few clients (docs/PERFORMANCE.md#otlp-request-latency):
# the scenario at 1, 4 and 16 closed-loop clients, each run after its own
# nop-exporter ceiling; then ours alone paced at 80 % of the rate the
# 4-client run reached, where the latency targets apply. Each report has
# the request's mean split into the collector's part, the Flight transfer
# and the sidecar's durable ack. The load average before each run goes to
# the summary: on a shared machine it says how much to trust the run.
#   SCENARIO=traces DURATION=60s CLIENTS="1 4 16" loadtest/latency.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${SCENARIO:-traces}
DURATION=${DURATION:-60s}
CLIENTS=${CLIENTS:-1 4 16}
OUT=${OUT:-loadtest/results/latency-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
run() { # name, then arcload flags
  local name=$1
  shift
  echo "$name: load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/summary.txt"
  bin/arcload -scenario "$SCENARIO" -duration "$DURATION" -out "$OUT/$name" "$@" ${ARCLOAD_FLAGS:-} \
    >"$OUT/$name.log" 2>&1 || { tail -30 "$OUT/$name.log"; exit 1; }
  grep -E '^(ceiling|arc) |request mean|arc / ceiling' "$OUT/$name.log" | tee -a "$OUT/summary.txt"
}
for w in $CLIENTS; do
  run "clients-$w" -workers "$w"
done
if [ -f "$OUT/clients-4/report.json" ]; then
  # No rate (a run that counted no rows) must not become -rate 0: unpaced.
  rate=$(jq -e '.arc.rate_per_s * 0.8 | floor | select(. > 0)' "$OUT/clients-4/report.json") ||
    { echo "clients-4 reported no stored rate to pace at 80 % of" >&2; exit 1; }
  run "clients-4-at-80pct" -workers 4 -ceiling=false -rate "$rate"
fi
echo "results in $OUT"
