"""Reads the lake with Spark, the plain Parquet tree and the Iceberg tables,
and prints what the Go test computes with DuckDB over the plain files.

Usage: python3 spark_read.py ROOT CUT_US UNTIL_US SERVICE

The plain tree as docs/QUERIES.md reads it (spark.read with mergeSchema,
the Hive partitions discovered from the folders), per table: the rows,
the rows at or after CUT_US, the first and last time and the nested times
(span events, exemplars) in microseconds, the partitions, and the types
Spark gives time, date and hour.

ICEBERG (environment), when set, is JSON {"jars", "conf", "query"}:
docs/LAKE.md's Spark settings, which the session starts with, and its
query, run as written. Then every table again through the catalog
arcstore: the rows, the rows in [CUT_US, UNTIL_US), the rows of service
SERVICE, the first and last time and the nested times.

One local SparkSession, one JVM, every query in it; the working directory
is laid out like the checkout (./data, ./.tools).
"""
import json
import os
import sys

from pyspark.sql import SparkSession

root, cut, until, service = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
TABLES = {"traces": "events", "logs": None, "events": None, "metrics": "exemplars", "cpu": None}
iceberg = json.loads(os.environ.get("ICEBERG") or "null")

builder = (
    SparkSession.builder.master("local[1]")
    .appName("arc-otel-lake")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
)
if iceberg:
    builder = builder.config("spark.jars", iceberg["jars"])
    for key, value in iceberg["conf"].items():
        builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")


def nested_times(src, nested):
    n = spark.sql(f"SELECT count(*) AS n, unix_micros(max(x.time)) AS hi FROM {src} LATERAL VIEW explode({nested}) e AS x").first()
    return n.n, n.hi


plain = {}
for table, nested in TABLES.items():
    df = spark.read.option("mergeSchema", "true").parquet(f"{root}/default/{table}")
    df.createOrReplaceTempView(table)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    r = spark.sql(
        f"SELECT count(*) AS rows, unix_micros(min(time)) AS lo, unix_micros(max(time)) AS hi, "
        f"count(DISTINCT date, hour) AS parts FROM {table}"
    ).first()
    late = spark.sql(f"SELECT count(*) AS n FROM {table} WHERE time >= timestamp_micros({cut})").first()
    out = {"rows": r.rows, "late": late.n, "lo": r.lo, "hi": r.hi, "parts": r.parts,
           "types": {k: types[k] for k in ("time", "date", "hour")}}
    if nested:
        out["nested"], out["nested_max"] = nested_times(table, nested)
        out["types"][nested] = types[nested]
    plain[table] = out
result = {"plain": plain}

if iceberg:
    result["doc"] = {r[0]: r[1] for r in spark.sql(iceberg["query"].strip().rstrip(";")).collect()}
    tables = {}
    for table, nested in TABLES.items():
        src = f"arcstore.default.{table}"
        r = spark.sql(f"SELECT count(*) AS rows, unix_micros(min(time)) AS lo, unix_micros(max(time)) AS hi FROM {src}").first()
        window = spark.sql(
            f"SELECT count(*) AS n FROM {src} WHERE time >= timestamp_micros({cut}) AND time < timestamp_micros({until})"
        ).first()
        out = {"rows": r.rows, "window": window.n, "lo": r.lo, "hi": r.hi,
               "time_type": spark.table(src).schema["time"].dataType.simpleString()}
        if table != "cpu":
            out["service"] = spark.sql(f"SELECT count(*) AS n FROM {src} WHERE service_name = '{service}'").first().n
        if nested:
            out["nested"], out["nested_max"] = nested_times(src, nested)
        tables[table] = out
    result["iceberg"] = tables
spark.stop()
print(json.dumps(result))
