"""Writes line protocol to arcstore's /api/v2/write with InfluxData's
official Python client (influxdb-client 1.50.0), in every precision,
plain and gzip, then prints what it sent as JSON.

Usage: ARC_URL=... ARC_TOKEN=... ARC_BASE_S=... python3 influx_client.py
"""
import json
import os

from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.exceptions import InfluxDBError
from influxdb_client.client.write_api import SYNCHRONOUS

url, token, base = os.environ["ARC_URL"], os.environ["ARC_TOKEN"], int(os.environ["ARC_BASE_S"])
scale = {WritePrecision.S: 1, WritePrecision.MS: 10**3, WritePrecision.US: 10**6, WritePrecision.NS: 10**9}
sent = 0
for gzip in (False, True):
    with InfluxDBClient(url=url, token=token, org="ignored", enable_gzip=gzip) as client:
        write = client.write_api(write_options=SYNCHRONOUS)
        for prec, mult in scale.items():
            points = [
                Point("influx_cpu").tag("host", f"h{i}").tag("prec", str(prec)).tag("gzip", str(gzip))
                .field("usage", 0.5 + i).field("count", i).field("ok", True).field("note", "a \"quoted\", string")
                .time(base * mult, prec)
                for i in range(3)
            ]
            write.write(bucket="influx", record=points, write_precision=prec)
            sent += len(points)
        # Raw line protocol, as Telegraf's influxdb_v2 output sends it.
        write.write(bucket="influx", record=f"influx_mem,host=h\\ 1 free=12u,used=3i {base}", write_precision=WritePrecision.S)
        sent += 1

# A partial write: the first line stored, the second dropped, the client told.
refused = {}
with InfluxDBClient(url=url, token=token, org="ignored") as client:
    try:
        client.write_api(write_options=SYNCHRONOUS).write(
            bucket="influx", record=["influx_bad v=1i", "influx_bad v=2.5"], write_precision=WritePrecision.S)
    except InfluxDBError as e:
        refused = {"status": e.response.status, "message": e.message}
with InfluxDBClient(url=url, token="wrong", org="ignored") as client:
    try:
        client.write_api(write_options=SYNCHRONOUS).write(bucket="influx", record="influx_bad v=1")
        unauthorized = 0
    except InfluxDBError as e:
        unauthorized = e.response.status

print(json.dumps({"sent": sent, "refused": refused, "unauthorized": unauthorized}))
