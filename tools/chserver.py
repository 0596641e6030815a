"""A ClickHouse server for tests, from the chdb-core wheel (make tools).

chdb embeds the full ClickHouse engine; asked to listen, it serves the
native and HTTP protocols for as long as a query runs. This launcher
writes the ports into config.xml in the data directory, starts listening,
then keeps a sleeping query running until it is killed.

    PYTHONPATH=.tools/chdb python3 tools/chserver.py DIR TCP_PORT HTTP_PORT
"""
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: chserver.py DIR TCP_PORT HTTP_PORT")
    data, tcp, http = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(data, exist_ok=True)
    os.chdir(data)  # chdb reads config.xml from the working directory
    with open("config.xml", "w") as f:
        f.write(
            "<clickhouse><listen_host>127.0.0.1</listen_host>"
            f"<tcp_port>{tcp}</tcp_port><http_port>{http}</http_port></clickhouse>\n"
        )
    import chdb._chdb as c

    print(f"chserver: listening on 127.0.0.1:{tcp} (native) and 127.0.0.1:{http} (HTTP)", flush=True)
    # One call: the listeners serve while its last statement runs (about a
    # day, one row a second).
    c.query(
        "SYSTEM START LISTEN TCP; SYSTEM START LISTEN HTTP; "
        "SELECT sleepEachRow(1) FROM numbers(86400) "
        "SETTINGS function_sleep_max_microseconds_per_block=100000000000, max_block_size=1 FORMAT Null",
        "CSV",
        path=data,
    )


if __name__ == "__main__":
    main()
