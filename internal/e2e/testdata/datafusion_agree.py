"""Reads the campaign story's tables with Apache DataFusion and prints, as
JSON, what TestEnginesAgree computes with DuckDB and pyarrow, then how it
reads tables of two schemas.

Usage: python3 datafusion_agree.py ROOT OLD SCRATCH

ROOT is the story's data directory, OLD a traces folder holding one file
DuckDB wrote without the region column, SCRATCH an empty directory.
"""
import glob
import json
import shutil
import sys

import pyarrow.parquet as pq
from datafusion import SessionContext

root, old, scratch = sys.argv[1:4]
ctx = SessionContext()
out = {}


def one(sql, c=ctx):
    rows = c.sql(sql).to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def mixed(c, table):
    return one(f"SELECT count(*) AS rows, count(*) FILTER (WHERE region IS NULL) AS null_region FROM {table}", c)


for table in ["traces", "logs", "events", "metrics"]:
    ctx.sql(f"CREATE EXTERNAL TABLE {table} STORED AS PARQUET LOCATION '{root}/default/{table}/'")
    out[table] = one(f"SELECT count(*) AS rows, count(DISTINCT hour) AS hours FROM {table}")
out["traces"].update(one("SELECT sum(duration_ns) AS duration_ns, count(*) FILTER (WHERE error) AS errors, "
                         "count(DISTINCT service_name) AS services, sum(cardinality(attributes)) AS attribute_entries FROM traces"))
out["metrics"]["value"] = one("SELECT round(sum(value), 3) AS v FROM metrics")["v"]

# Two folders, bound by column name in SQL.
ctx.sql(f"CREATE EXTERNAL TABLE old STORED AS PARQUET LOCATION '{old}/'")
out["union"] = mixed(ctx, "(SELECT * FROM traces UNION ALL BY NAME SELECT * FROM old)")

# One folder: the story's traces beside a file of theirs without the
# region column, its other columns typed as ours (pyarrow keeps them).
folder = f"{scratch}/traces"
shutil.copytree(f"{root}/default/traces", folder)
first = sorted(glob.glob(f"{folder}/**/*.parquet", recursive=True))[0]
pq.write_table(pq.read_table(first, partitioning=None).drop_columns(["region"]).slice(0, 100), first[:-len(".parquet")] + "-older.parquet")
c = SessionContext()
c.sql(f"CREATE EXTERNAL TABLE traces STORED AS PARQUET LOCATION '{folder}/'")
out["folder"] = mixed(c, "traces")

# The same folder with DuckDB's file in it too: its map values are
# nullable, ours are not, and DataFusion merges no two types.
shutil.copytree(old, folder, dirs_exist_ok=True)
try:
    SessionContext().sql(f"CREATE EXTERNAL TABLE traces STORED AS PARQUET LOCATION '{folder}/'")
    out["refused"] = ""
except Exception as e:
    out["refused"] = str(e)
print(json.dumps(out))
