#!/usr/bin/env bash
# The ClickHouse sink under the load harness (docs/PERFORMANCE.md): starts a
# ClickHouse 26.9 (chdb-core, tools/chserver.py) on loopback, then runs the
# same arcload scenario three times, each after its nop-exporter ceiling:
# Parquet alone (the side-by-side reference), Parquet + ClickHouse, and
# ClickHouse alone (-parquet=false); the loss check counts in ClickHouse
# too, and the ClickHouse server's CPU is reported per run.
#   SCENARIO=traces DURATION=60s loadtest/clickhouse.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCENARIO=${SCENARIO:-traces}
DURATION=${DURATION:-60s}
OUT=${OUT:-loadtest/results/clickhouse-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TCP=$(free_port)
HTTP=$(free_port)
PYTHONPATH=.tools/chdb python3 tools/chserver.py "$OUT/clickhouse" "$TCP" "$HTTP" >"$OUT/chserver.log" 2>&1 &
CH=$!
trap 'kill $CH 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$TCP") 2>/dev/null && break; sleep 0.2; done

ticks() { awk '{print $14 + $15}' "/proc/$CH/stat"; }
query() { curl -sf "http://127.0.0.1:$HTTP/" --data-binary "$1"; }

for mode in ${MODES:-parquet parquet+clickhouse clickhouse}; do
  case $mode in
    parquet) args="" ;;
    parquet+clickhouse) args="-clickhouse-addr 127.0.0.1:$TCP" ;;
    clickhouse) args="-clickhouse-addr 127.0.0.1:$TCP -parquet=false" ;;
  esac
  for t in traces logs metrics events; do query "DROP TABLE IF EXISTS default.$t SYNC" >/dev/null; done
  before=$(ticks)
  ch=""
  # With its pid the report gives the server's CPU over the load alone.
  [ -n "$args" ] && ch="-clickhouse-http http://127.0.0.1:$HTTP -clickhouse-pid $CH"
  bin/arcload -scenario "$SCENARIO" -duration "$DURATION" -sidecar-args "$args" -out "$OUT/$mode" $ch \
    ${ARCLOAD_FLAGS:-} >"$OUT/$mode.log" 2>&1 || { tail -30 "$OUT/$mode.log"; exit 1; }
  tail -25 "$OUT/$mode.log"
  after=$(ticks)
  rows=$(query "SELECT sum(rows) FROM system.parts WHERE database = 'default' AND active")
  echo "$mode: ClickHouse server CPU $(awk "BEGIN {printf \"%.2f\", ($after - $before) / 100}") s (the whole run) for ${rows:-0} rows in ClickHouse" | tee -a "$OUT/summary.txt"
done
echo "results in $OUT"
