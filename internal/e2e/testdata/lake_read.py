"""Reads the lake story's tables with pyarrow and with Polars and prints,
per engine and table, what the Go test computes with DuckDB: the rows,
the rows at or after a time, the first and last time, and the nested times
(span events, exemplars), all in microseconds since the epoch.

Usage: python3 lake_read.py ROOT CUT_US plain|mixed

plain reads the folders as docs/QUERIES.md does. mixed reads a tree where
a partition may also hold files of an earlier build (nanosecond
timestamps), with the options docs/SCHEMA.md gives for that: pyarrow
unifies the files' schemas, Polars casts both units.
"""
import json
import sys

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

root, cut, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
TABLES = {"traces": "events", "logs": None, "events": None, "metrics": "exemplars", "cpu": None}


def micros(arr):
    """Timestamps of any unit as int64 microseconds (truncated)."""
    unit = arr.type.unit
    v = pc.cast(arr, pa.int64())
    return pc.divide(v, 1000) if unit == "ns" else v


def arrow_table(path):
    d = ds.dataset(path, format="parquet", partitioning="hive")
    if mode == "mixed":
        unified = pa.unify_schemas([d.schema] + [f.physical_schema for f in d.get_fragments()], promote_options="permissive")
        d = d.replace_schema(unified)
    return d.to_table()


def arrow_stats(path, nested):
    t = arrow_table(path)
    times = micros(t["time"].combine_chunks())
    out = {
        "rows": t.num_rows,
        "late": pc.sum(pc.cast(pc.greater_equal(times, cut), pa.int64())).as_py(),
        "lo": pc.min(times).as_py(),
        "hi": pc.max(times).as_py(),
    }
    if nested:
        inner = pc.list_flatten(t[nested].combine_chunks())
        nt = micros(pc.struct_field(inner, "time"))
        out["nested"], out["nested_max"] = len(nt), pc.max(nt).as_py()
    return out


def polars_frame(path):
    options = {}
    if mode == "mixed":
        options["cast_options"] = pl.ScanCastOptions(datetime_cast=["nanosecond-downcast", "microsecond-upcast"])
    return pl.scan_parquet(f"{path}/**/*.parquet", hive_partitioning=True, **options)


def polars_stats(path, nested):
    lf = polars_frame(path)
    us = pl.col("time").dt.epoch("us")
    out = lf.select(
        pl.len().alias("rows"),
        (us >= cut).sum().alias("late"),
        us.min().alias("lo"),
        us.max().alias("hi"),
    ).collect().row(0, named=True)
    if nested:
        nt = lf.select(pl.col(nested).explode().struct.field("time").dt.epoch("us").alias("t")).drop_nulls().collect()["t"]
        out["nested"], out["nested_max"] = nt.len(), nt.max()
    return out


result = {"pyarrow": {}, "polars": {}}
for table, nested in TABLES.items():
    path = f"{root}/default/{table}"
    result["pyarrow"][table] = arrow_stats(path, nested)
    result["polars"][table] = polars_stats(path, nested)
print(json.dumps(result))
