#!/usr/bin/env bash
# Query latency before and after compaction (docs/PERFORMANCE.md): loads
# traces into a past hour through the real stack, times DuckDB on the three
# common questions, compacts with `arcstore compact`, and times them again.
#   DURATION=60s loadtest/querybench.sh     (about 14 M spans on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-loadtest/results/querybench-$(date -u +%Y%m%dT%H%M%SZ)}
DURATION=${DURATION:-60s}
mkdir -p "$(dirname "$OUT")"
DUCKDB=${DUCKDB:-.tools/duckdb}
RUNS=${RUNS:-3}

bin/arcload -scenario traces -ceiling=false -time-offset -2h -duration "$DURATION" -out "$OUT/load" >"$OUT.load.log" 2>&1 || {
  tail -20 "$OUT.load.log"; exit 1; }
DATA=$OUT/load/arc/data
TRACES="read_parquet('$DATA/default/traces/**/*.parquet', hive_partitioning = true)"
ID=$("$DUCKDB" -noheader -list -c "SELECT trace_id FROM $TRACES USING SAMPLE 1 ROWS")

# best of RUNS, in ms
timed() {
  local best=""
  for _ in $(seq "$RUNS"); do
    local t
    t=$("$DUCKDB" -c ".timer on" -c "$1" | awk '/Run Time/ {print $5 * 1000}' | tail -1)
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  printf '%.0f' "$best"
}

measure() {
  local rows files bytes
  rows=$("$DUCKDB" -noheader -list -c "SELECT count(*) FROM $TRACES")
  files=$(find "$DATA/default/traces" -name '*.parquet' | wc -l)
  bytes=$(find "$DATA/default/traces" -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}')
  printf '| %s | %s | %s | %.1f | %s | %s | %s |\n' "$1" "$rows" "$files" "$(awk "BEGIN{print $bytes/$rows}")" \
    "$(timed "SELECT * FROM $TRACES WHERE trace_id = '$ID'")" \
    "$(timed "SELECT service_name, operation_name, quantile_cont(duration_ns, 0.95) FROM $TRACES GROUP BY ALL")" \
    "$(timed "SELECT count(*) FROM $TRACES WHERE error AND time >= (SELECT min(time) FROM $TRACES) + INTERVAL 10 SECOND AND time < (SELECT min(time) FROM $TRACES) + INTERVAL 40 SECOND")"
}

{
  echo "| files | spans | Parquet files | bytes/span | trace by id (ms) | p95 by service (ms) | errors in a 30 s window (ms) |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  measure "as flushed"
  bin/arcstore compact -data-dir "$DATA" >"$OUT.compact.log" 2>&1
  measure "compacted"
} | tee "$OUT.md"
cat "$OUT.compact.log" | tail -1
