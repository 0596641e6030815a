"""Reads the lake story's Parquet tree with Spark as docs/QUERIES.md does
(spark.read with mergeSchema, the Hive partitions discovered from the
folders) and prints, per table, what the Go test computes with DuckDB:
the rows, the rows at or after a time (a filter on time), the first and
last time and the nested times (span events, exemplars) in microseconds,
the partitions, and the types Spark gives time, date and hour.

Usage: python3 spark_read.py ROOT CUT_US

One local SparkSession, one JVM, every query in it.
"""
import json
import sys

from pyspark.sql import SparkSession

root, cut = sys.argv[1], int(sys.argv[2])
TABLES = {"traces": "events", "logs": None, "events": None, "metrics": "exemplars", "cpu": None}

spark = (
    SparkSession.builder.master("local[1]")
    .appName("arc-otel-plain-tree")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
result = {}
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
        n = spark.sql(
            f"SELECT count(*) AS n, unix_micros(max(x.time)) AS hi FROM {table} LATERAL VIEW explode({nested}) e AS x"
        ).first()
        out["nested"], out["nested_max"] = n.n, n.hi
        out["types"][nested] = types[nested]
    result[table] = out
spark.stop()
print(json.dumps(result))
