"""Scans the sidecar's Iceberg tables with PyIceberg's SqlCatalog on the
embedded SQLite catalog and prints counts as JSON.

CATALOG is the catalog file; SCANS a JSON list of
{"name", "table", "since", "until", "service"}: each counts the table's rows
whose time is in [since, until) (ISO 8601, either may be empty) and whose
service_name is service (if given). FILES names a table whose data file
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
catalog = SqlCatalog("arcstore", uri="sqlite:///" + os.environ["CATALOG"], **props)
out = {"counts": {}, "files": {}}
for s in json.loads(os.environ.get("SCANS") or "[]") or []:
    table = catalog.load_table(s["table"])
    f = AlwaysTrue()
    if s.get("since"):
        f = And(f, GreaterThanOrEqual("time", s["since"]))
    if s.get("until"):
        f = And(f, LessThan("time", s["until"]))
    if s.get("service"):
        f = And(f, EqualTo("service_name", s["service"]))
    out["counts"][s["name"]] = table.scan(row_filter=f).to_arrow().num_rows
for name in os.environ.get("FILES", "").split(","):
    if name:
        out["files"][name] = len(catalog.load_table(name).scan().plan_files())
print(json.dumps(out))
