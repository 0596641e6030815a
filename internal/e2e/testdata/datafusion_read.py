"""Reads the lake story's tables with Apache DataFusion and prints, as JSON,
what the Go test computes with DuckDB: per table the rows, the rows at or
after a time, the first and last time, the partitions and the nested
times (span events, exemplars) in microseconds since the epoch; the types
DataFusion gives the time and partition columns; the md5 of every
attribute map entry; the md5 of the span ids; and the partitions read
with their columns typed as docs/QUERIES.md says.

Usage: python3 datafusion_read.py ROOT CUT_US plain|mixed

plain reads each folder with CREATE EXTERNAL TABLE and nothing else, as
docs/QUERIES.md does. mixed reads a tree where a partition also holds
files of an earlier build (nanosecond timestamps): it records the error
of the plain reading, then reads with docs/SCHEMA.md's workaround, the
schema of a file this build wrote.
"""
import glob
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from datafusion import SessionContext

root, cut, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TABLES = {"traces": "events", "logs": None, "events": None, "metrics": "exemplars", "cpu": None}
ATTRIBUTES = ["traces", "logs", "events", "metrics"]

ctx = SessionContext()
result = {"stats": {}, "types": {}, "attributes": {}, "partitions": {}, "refused": {}}


def one(sql):
    rows = ctx.sql(sql).to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def register(table, path):
    if mode == "plain":
        ctx.sql(f"CREATE EXTERNAL TABLE {table} STORED AS PARQUET LOCATION '{path}/'")
        return
    try:
        ctx.sql(f"CREATE EXTERNAL TABLE {table}_as_is STORED AS PARQUET LOCATION '{path}/'")
    except Exception as e:  # DataFusion refuses to merge the two units
        result["refused"][table] = str(e)
    # docs/SCHEMA.md: the schema of a file this build wrote (microseconds).
    ours = next(f for f in sorted(glob.glob(f"{path}/**/*.parquet", recursive=True)) if not f.endswith("-earlier.parquet"))
    ctx.register_parquet(table, f"{path}/", schema=pq.read_schema(ours),
                         table_partition_cols=[("date", pa.string()), ("hour", pa.string())])


for table, nested in TABLES.items():
    path = f"{root}/default/{table}"
    register(table, path)
    # A µs timestamp cast to BIGINT is its µs since the epoch: the types
    # below say the column is one.
    stats = one(f"SELECT count(*) AS rows, count(*) FILTER (WHERE time >= to_timestamp_micros({cut})) AS late, "
                f"CAST(min(time) AS BIGINT) AS lo, CAST(max(time) AS BIGINT) AS hi, "
                f"count(DISTINCT (date, hour)) AS parts FROM {table}")
    types = one(f"SELECT arrow_typeof(time) AS time, arrow_typeof(date) AS date, arrow_typeof(hour) AS hour FROM {table} LIMIT 1")
    if nested:
        stats.update(one(f"SELECT count(*) AS nested, CAST(max(x['time']) AS BIGINT) AS nested_max "
                         f"FROM (SELECT unnest({nested}) AS x FROM {table})"))
        types["nested"] = one(f"SELECT arrow_typeof(x['time']) AS t FROM (SELECT unnest({nested}) AS x FROM {table}) LIMIT 1")["t"]
    result["stats"][table], result["types"][table] = stats, types
    if table in ATTRIBUTES:
        result["attributes"][table] = one(
            "SELECT md5(string_agg(line, ',' ORDER BY line)) AS d FROM (SELECT us || ' ' || k || '=' || v AS line "
            f"FROM (SELECT CAST(time AS BIGINT) AS us, unnest(map_keys(attributes)) AS k, unnest(map_values(attributes)) AS v FROM {table}))")["d"]
    if mode == "plain":
        # docs/QUERIES.md: the partition columns typed at registration.
        ctx.register_parquet(f"{table}_typed", f"{path}/", table_partition_cols=[("date", pa.date32()), ("hour", pa.int32())])
        rows = ctx.sql(f"SELECT DISTINCT date, hour FROM {table}_typed ORDER BY date, hour").to_pylist()
        result["partitions"][table] = [f"{r['date'].isoformat()} {r['hour']}" for r in rows]

result["ids"] = one("SELECT md5(string_agg(line, ',' ORDER BY line)) AS d FROM "
                    "(SELECT trace_id || ' ' || span_id || ' ' || parent_span_id AS line FROM traces)")["d"]
print(json.dumps(result))
