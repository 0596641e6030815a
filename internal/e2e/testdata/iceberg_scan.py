"""Scans the sidecar's Iceberg tables with PyIceberg's SqlCatalog on the
embedded SQLite catalog and prints counts as JSON.

CATALOG is the catalog file; SCANS a JSON list of
{"name", "table", "since", "until", "service", "distinct"}: each counts the
table's rows whose time is in [since, until) (ISO 8601, either may be
empty) and whose service_name is service (if given), and the distinct
values of the column distinct names. CATALOG_URI (an SQLAlchemy URI)
names a shared catalog instead of the file CATALOG. FILES names a table whose data file
count is printed too. S3_ENDPOINT, S3_ACCESS and S3_SECRET read a bucket
warehouse.
"""
import json
import os

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import AlwaysTrue, And, EqualTo, GreaterThanOrEqual, LessThan

props = {}
if os.environ.get("S3_ENDPOINT"):
    # The bucket warehouse: PyIceberg reads metadata and data from versitygw.
    props = {"s3.endpoint": os.environ["S3_ENDPOINT"], "s3.access-key-id": os.environ["S3_ACCESS"],
             "s3.secret-access-key": os.environ["S3_SECRET"], "s3.region": "us-east-1"}
uri = os.environ.get("CATALOG_URI") or "sqlite:///" + os.environ["CATALOG"]
catalog = SqlCatalog("arcstore", uri=uri, **props)
out = {"counts": {}, "files": {}, "distinct": {}}
for s in json.loads(os.environ.get("SCANS") or "[]") or []:
    table = catalog.load_table(s["table"])
    f = AlwaysTrue()
    if s.get("since"):
        f = And(f, GreaterThanOrEqual("time", s["since"]))
    if s.get("until"):
        f = And(f, LessThan("time", s["until"]))
    if s.get("service"):
        f = And(f, EqualTo("service_name", s["service"]))
    rows = table.scan(row_filter=f).to_arrow()
    out["counts"][s["name"]] = rows.num_rows
    if s.get("distinct"):
        out["distinct"][s["name"]] = len(set(rows.column(s["distinct"]).to_pylist()))
for name in os.environ.get("FILES", "").split(","):
    if name:
        out["files"][name] = len(catalog.load_table(name).scan().plan_files())
print(json.dumps(out))
