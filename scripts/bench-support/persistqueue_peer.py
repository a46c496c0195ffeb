"""The peer: persist-queue's SQLiteAckQueue on the same put / get+ack workload as EventQueue.

Usage: persistqueue_peer.py DIRECTORY COUNT   (prints one JSON line)

Defaults as shipped (WAL, SQLite's default synchronous = FULL, auto_commit=True: one transaction per put and
per ack, pickle serializer). The item is the same Braze event object EventQueue stores.
"""
import json
import os
import shutil
import sys
import time

import persistqueue
from persistqueue import SQLiteAckQueue


def main() -> None:
    directory, count = sys.argv[1], int(sys.argv[2])
    shutil.rmtree(directory, ignore_errors=True)
    queue = SQLiteAckQueue(directory, multithreading=False, auto_commit=True)
    synchronous = queue._getter.execute("PRAGMA synchronous").fetchone()[0]
    journal = queue._getter.execute("PRAGMA journal_mode").fetchone()[0]
    start = time.perf_counter()
    for index in range(count):
        queue.put({
            "external_id": f"user-{index % 50}", "name": "song_liked", "time": "2026-11-23T00:00:00.000Z",
            "properties": {"song": f"song-{index}", "position": index},
        })
    put_seconds = time.perf_counter() - start
    start = time.perf_counter()
    got = 0
    while True:
        try:
            item = queue.get(block=False)
        except persistqueue.exceptions.Empty:
            break
        queue.ack(item)
        got += 1
    get_seconds = time.perf_counter() - start
    shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps({
        "put_per_s": count / put_seconds, "get_ack_per_s": got / get_seconds, "count": count, "got": got,
        "synchronous": synchronous, "journal_mode": journal, "version": persistqueue.__version__,
        "python": sys.version.split()[0],
    }))


if __name__ == "__main__":
    main()
