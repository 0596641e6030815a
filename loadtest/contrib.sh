#!/usr/bin/env bash
# Our stack beside the collector users already run (docs/PERFORMANCE.md):
# the same arcload OTLP load, with the same client count, against
#   ours:    otelcol-arc -> arc exporter -> arcstore -> Parquet (durable acks)
#   contrib: the contrib clickhouseexporter (ocb-built, loadtest/contrib)
#            -> a fresh ClickHouse 26.9 (chdb-core, tools/chserver.py)
# alternating in ORDER (A B B A by default), no nop ceiling. Each run's
# loss check counts the rows by id (in Parquet / in ClickHouse); the summary
# gives persisted rows/s, CPU per row of collector + sidecar against
# collector + ClickHouse server, peak RSS, bytes per row on disk, and the
# 1-minute load average before each run.
#   SCENARIO=traces DURATION=60s WORKERS=16 loadtest/contrib.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${SCENARIO:-traces}
DURATION=${DURATION:-60s}
WORKERS=${WORKERS:-16}
ORDER=${ORDER:-ours contrib contrib ours}
CONTRIB=${CONTRIB:-_build/contrib-clickhouse/otelcol-contrib-clickhouse}
OUT=${OUT:-loadtest/results/contrib-$(date -u +%Y%m%dT%H%M%SZ)-$SCENARIO}
mkdir -p "$OUT"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

CH=""
stop_clickhouse() {
  if [ -n "$CH" ]; then kill "$CH" 2>/dev/null || true; wait "$CH" 2>/dev/null || true; CH=""; fi
}
trap stop_clickhouse EXIT

# start_clickhouse DIR: a fresh server for one run, so its CPU, peak RSS
# and parts are that run's alone.
start_clickhouse() {
  TCP=$(free_port)
  HTTP=$(free_port)
  PYTHONPATH=.tools/chdb python3 tools/chserver.py "$1" "$TCP" "$HTTP" >"$1.log" 2>&1 &
  CH=$!
  for _ in $(seq 150); do
    curl -sf "http://127.0.0.1:$HTTP/ping" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "ClickHouse did not start: $(tail -5 "$1.log")" >&2
  exit 1
}

query() { curl -sf "http://127.0.0.1:$HTTP/" --data-binary "$1"; }

i=0
for who in $ORDER; do
  i=$((i + 1))
  run="$OUT/$i-$who"
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "== run $i: $who, $WORKERS clients, $SCENARIO for $DURATION (load average $load)"
  case $who in
    ours) args=() ;;
    contrib)
      start_clickhouse "$run-clickhouse"
      args=(-contrib-collector "$CONTRIB" -contrib-clickhouse-addr "127.0.0.1:$TCP"
        -clickhouse-http "http://127.0.0.1:$HTTP" -clickhouse-pid "$CH" -database otel)
      ;;
    *) echo "ORDER: want ours or contrib, not $who" >&2; exit 2 ;;
  esac
  echo "$load" >"$run.loadavg"
  status=0
  bin/arcload -scenario "$SCENARIO" -duration "$DURATION" -workers "$WORKERS" -ceiling=false \
    -out "$run" "${args[@]}" ${ARCLOAD_FLAGS:-} >"$run.log" 2>&1 || status=$?
  tail -12 "$run.log"
  if [ "$who" = contrib ]; then
    # What the server's acknowledgement of an insert promised.
    query "SELECT name, value FROM system.merge_tree_settings WHERE name IN ('fsync_after_insert', 'fsync_part_directory') ORDER BY name FORMAT TSV" >"$run.fsync" || true
    query "SELECT name, value FROM system.settings WHERE name IN ('async_insert', 'wait_for_async_insert', 'async_insert_busy_timeout_max_ms') ORDER BY name FORMAT TSV" >>"$run.fsync" || true
    stop_clickhouse
  fi
  [ "$status" = 0 ] || { echo "run $i ($who) failed: $run.log" >&2; exit "$status"; }
done

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, os, sys
out = sys.argv[1]
runs = sorted((d for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, "report.json"))), key=lambda d: int(d.split("-")[0]))
print("| run | stack | load avg | clients | persisted rows/s | acked | lost | dup | CPU µs/row collector | CPU µs/row store | CPU µs/row both | peak RSS collector MiB | peak RSS store MiB | bytes/row | request p50/p99 ms |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for d in runs:
    rep = json.load(open(os.path.join(out, d, "report.json")))
    ph = rep["arc"]
    load = open(os.path.join(out, d + ".loadavg")).read().strip()
    stored = [t for t in ph.get("loss", []) if t.get("bytes")]
    rows = sum(t["found"] for t in stored)
    nbytes = sum(t["bytes"] for t in stored)
    lost = sum(t["lost"] for t in ph.get("loss", []))
    dup = sum(t["duplicated"] for t in ph.get("loss", []))
    procs = ph["processes"]
    contrib = "otelcol-contrib" in procs
    col, store = ("otelcol-contrib", "clickhouse") if contrib else ("otelcol-arc", "arcstore")
    # A process missing from the report is an error, not 0 µs per row.
    us = lambda p: 1e6 * procs[p]["cpu_seconds"] / rows if rows else float("nan")
    mib = lambda p: procs[p]["peak_rss_bytes"] >> 20
    name = "contrib clickhouseexporter + ClickHouse" if contrib else "otelcol-arc + arcstore (Parquet)"
    lat = ph["latency"]
    print(f"| {d} | {name} | {load} | {rep['plan']['workers']} | {ph['rate_per_s']:,.0f} | {sum(ph['acked'].values()):,} | {lost} | {dup} | "
          f"{us(col):.2f} | {us(store):.2f} | {us(col) + us(store):.2f} | {mib(col)} | {mib(store)} | {nbytes / rows if rows else 0:.1f} | {lat['p50_ms']:.1f} / {lat['p99_ms']:.1f} |")
PY
for f in "$OUT"/*.fsync; do [ -e "$f" ] && { echo "ClickHouse settings ($(basename "$f" .fsync)):"; sed 's/^/  /' "$f"; break; }; done
echo "results in $OUT"
