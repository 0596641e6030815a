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
# A 5-second window in the middle of the run, as literals: engines prune
# row groups by constants, not by sub-query results.
read -r FROM TO < <("$DUCKDB" -noheader -list -separator ' ' -c \
  "SELECT strftime(t, '%Y-%m-%dT%H:%M:%S.%fZ'), strftime(t + INTERVAL 5 SECOND, '%Y-%m-%dT%H:%M:%S.%fZ') FROM (SELECT min(time) + (max(time) - min(time)) / 2 AS t FROM $TRACES)")

# best of RUNS, in ms; a query that fails fails the script (DuckDB still
# prints its run time)
timed() {
  local best="" out t
  for _ in $(seq "$RUNS"); do
    out=$("$DUCKDB" -c ".timer on" -c "$1") || { echo "query failed: $1" >&2; return 1; }
    t=$(awk '/Run Time/ {print $5 * 1000}' <<<"$out" | tail -1)
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  printf '%.0f' "$best"
}

measure() {
  local rows files bytes byid p95 window DATA=$2
  local TRACES="read_parquet('$DATA/default/traces/**/*.parquet', hive_partitioning = true)"
  rows=$("$DUCKDB" -noheader -list -c "SELECT count(*) FROM $TRACES")
  files=$(find "$DATA/default/traces" -name '*.parquet' | wc -l)
  bytes=$(find "$DATA/default/traces" -name '*.parquet' -printf '%s\n' | awk '{s+=$1} END {print s}')
  # Assigned, not substituted into printf's arguments, so a failure stops.
  byid=$(timed "SELECT * FROM $TRACES WHERE trace_id = '$ID'")
  p95=$(timed "SELECT service_name, operation_name, quantile_cont(duration_ns, 0.95) FROM $TRACES GROUP BY ALL")
  window=$(timed "SELECT count(*), max(duration_ns) FROM $TRACES WHERE time >= TIMESTAMPTZ '$FROM' AND time < TIMESTAMPTZ '$TO'")
  printf '| %s | %s | %s | %.1f | %s | %s | %s |\n' "$1" "$rows" "$files" "$(awk "BEGIN{print $bytes/$rows}")" "$byid" "$p95" "$window"
}

SORTED=$OUT/sorted
cp -r "$DATA" "$SORTED"
{
  echo "| layout | spans | Parquet files | bytes/span | trace by id (ms) | p95 by service and operation (ms) | a 5 s window (ms) |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  measure "as flushed" "$DATA"
  bin/arcstore compact -data-dir "$DATA" >"$OUT.compact-unsorted.log" 2>&1
  measure "compacted, arrival order" "$DATA"
  bin/arcstore compact -sort -data-dir "$SORTED" >"$OUT.compact-sorted.log" 2>&1
  measure "compacted, sorted (service, time)" "$SORTED"
} | tee "$OUT.md"
tail -qn1 "$OUT.compact-unsorted.log" "$OUT.compact-sorted.log"
