"""Reads the lake's Iceberg tables with DuckDB 1.4.4's iceberg extension
and prints what the Go test computes with DuckDB over the plain files.

Usage: python3 duckdb_iceberg.py CUT_US UNTIL_US SERVICE

LOCATION_SQL and SCAN_SQL (environment) are docs/LAKE.md's two DuckDB
blocks, run as written: the first, on the catalog file its comment names
(`-- sqlite3 PATH`), finds the traces table's metadata file; the second
loads the extensions and runs the query, with <metadata_location> replaced
by that file. Then every table through iceberg_scan on the metadata file
the catalog names: the rows, the rows in [CUT_US, UNTIL_US), the rows of
service SERVICE, the first and last time and the nested times in
microseconds.

The working directory is laid out like the checkout (./data, ./.tools).
"""
import datetime
import json
import os
import re
import sqlite3
import sys

import duckdb

cut, until, service = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
TABLES = {"traces": "events", "logs": None, "events": None, "metrics": "exemplars", "cpu": None}

location_sql = os.environ["LOCATION_SQL"]
catalog_path = re.match(r"-- sqlite3 (\S+)\n", location_sql).group(1)
catalog = sqlite3.connect(catalog_path)
(traces_location,) = catalog.execute(location_sql).fetchone()
locations = dict(catalog.execute(
    "SELECT table_name, metadata_location FROM iceberg_tables WHERE catalog_name = 'arcstore' AND table_namespace = 'default'"
).fetchall())

con = duckdb.connect()
*loads, query = [s.strip() for s in os.environ["SCAN_SQL"].split(";") if s.strip()]
for statement in loads:
    con.execute(statement)
result = {
    "location": traces_location,
    "doc": dict(con.execute(query.replace("<metadata_location>", traces_location)).fetchall()),
}


def literal(us):
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=us)
    return f"TIMESTAMPTZ '{t.isoformat()}'"


tables = {}
for table, nested in TABLES.items():
    src = f"iceberg_scan('{locations[table]}')"
    rows, lo, hi = con.execute(f"SELECT count(*), epoch_us(min(time)), epoch_us(max(time)) FROM {src}").fetchone()
    (window,) = con.execute(f"SELECT count(*) FROM {src} WHERE time >= {literal(cut)} AND time < {literal(until)}").fetchone()
    out = {"rows": rows, "window": window, "lo": lo, "hi": hi,
           "time_type": con.execute(f"SELECT typeof(time) FROM {src} LIMIT 1").fetchone()[0]}
    if table != "cpu":
        (out["service"],) = con.execute(f"SELECT count(*) FROM {src} WHERE service_name = ?", [service]).fetchone()
    if nested:
        out["nested"], out["nested_max"] = con.execute(
            f"SELECT count(*), epoch_us(max(x.time)) FROM (SELECT unnest({nested}) AS x FROM {src})"
        ).fetchone()
    tables[table] = out
result["iceberg"] = tables
print(json.dumps(result))
