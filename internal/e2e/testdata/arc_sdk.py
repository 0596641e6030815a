"""Writes to arcstore with every write method arc-tsdb-client 0.1.2's
README shows (and write_records and write_point, which its API has), then
prints what it sent as JSON for the Go test to read back with DuckDB.

Usage: ARC_PORT=... ARC_TOKEN=... ARC_BASE_US=... python3 arc_sdk.py
"""
import asyncio
import json
import os

import pyarrow as pa
from arc_client import ArcClient, AsyncArcClient

port = int(os.environ["ARC_PORT"])
token = os.environ["ARC_TOKEN"]
base = int(os.environ["ARC_BASE_US"])  # microseconds, an hour ago
sent = {}  # "database/measurement" -> rows


def count(db, m, n):
    sent[f"{db}/{m}"] = sent.get(f"{db}/{m}", 0) + n


with ArcClient(host="127.0.0.1", port=port, token=token) as client:
    # Columnar (gzip, the client's default), and to another database.
    client.write.write_columnar(
        measurement="sdk_columnar",
        columns={
            "time": [base, base + 1, base + 2],
            "host": ["server01", "server02", "server03"],
            "region": ["us-east", "us-west", "eu"],
            "usage_idle": [95.0, 87.3, 50.5],
            "cores": [4, 8, 16],
        },
    )
    count("default", "sdk_columnar", 3)
    client.write.write_columnar(
        measurement="sdk_columnar",
        columns={"time": [base], "host": ["server09"], "usage_idle": [1.5], "cores": [2]},
        database="other",
        compress=False,
    )
    count("other", "sdk_columnar", 1)

    # Row format (MessagePack records).
    client.write.write_records(
        [
            {"measurement": "sdk_rows", "timestamp": base + i, "tags": {"host": f"h{i}"},
             "fields": {"usage": 10.5 + i, "count": i, "ok": i % 2 == 0, "note": f"row {i}"}}
            for i in range(5)
        ]
    )
    count("default", "sdk_rows", 5)

    # A PyArrow table.
    table = pa.table({
        "time": pa.array([base + 10, base + 11], type=pa.int64()),
        "host": ["arrow1", "arrow2"],
        "value": [42.0, 43.5],
    })
    client.write.write_dataframe(table, measurement="sdk_arrow", tag_columns=["host"])
    count("default", "sdk_arrow", 2)

    # Buffered: flushes at 10 and 20 records and the rest on exit.
    with client.write.buffered(batch_size=10, flush_interval=60.0) as buffer:
        for i in range(25):
            buffer.write({"measurement": "sdk_buffered", "timestamp": base + i,
                          "tags": {"source": f"s{i % 3}"}, "fields": {"value": float(i)}})
    count("default", "sdk_buffered", 25)

    # Line protocol: one line with a timestamp (ns), then lines without.
    client.write.write_line_protocol(f"sdk_lp,host=server01 usage=45.2 {base * 1000}")
    client.write.write_line_protocol(["sdk_lp,host=server02 usage=67.8", "sdk_lp,host=server03 usage=1"])
    count("default", "sdk_lp", 3)

    # One point (microseconds; the client sends nanoseconds).
    client.write.write_point("sdk_point", fields={"temp": 21.5, "label": 'say "hi"'},
                             tags={"room": "a b,c=d"}, timestamp=base + 5)
    count("default", "sdk_point", 1)


async def write_async():
    async with AsyncArcClient(host="127.0.0.1", port=port, token=token) as client:
        await client.write.write_columnar(
            measurement="sdk_async", columns={"time": [base, base + 1], "host": ["x", "y"], "usage": [1.0, 2.0]})
        async with client.write.buffered(batch_size=5) as buffer:
            for i in range(7):
                await buffer.write({"measurement": "sdk_async_buffered", "timestamp": base + i, "fields": {"v": i}})


asyncio.run(write_async())
count("default", "sdk_async", 2)
count("default", "sdk_async_buffered", 7)

# A partial write (a line dropped) surfaces as the client's error, with our message.
try:
    with ArcClient(host="127.0.0.1", port=port, token=token) as client:
        client.write.write_line_protocol(["sdk_bad v=1i", "sdk_bad v=2.5"])
    refused = ""
except Exception as e:  # noqa: BLE001
    refused = str(e)

print(json.dumps({"sent": sent, "refused": refused}))
