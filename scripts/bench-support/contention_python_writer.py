#!/usr/bin/env python3
"""A writer of another language for `eventqueue-bench contention` (EVENTQUEUE_BENCH_PYTHON_WRITERS=N).

Writes the way docs/WRITERS.md tells Python writers to, unchanged: `sqlite3` with `timeout=5.0` (SQLite's own busy
handler), autocommit, `synchronous = FULL`, the documented INSERT with an idempotency key. It does not wait in the
writers' line (the `-turn` file), so the run shows whether such writers are starved by writers that do.

Usage: contention_python_writer.py DB SECONDS
Prints `count busy errors`, then per enqueue `latency_us start_us cpu_wait_us` (start on CLOCK_MONOTONIC), the
format of the bench's own child writers.
"""
import json
import os
import sqlite3
import sys
import time


def run_delay_ns():
    try:
        with open("/proc/self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def main():
    path, seconds = sys.argv[1], float(sys.argv[2])
    db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=5.0, isolation_level=None)
    db.execute("PRAGMA synchronous = FULL")
    sql = (
        "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
        "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING"
    )
    pid = os.getpid()
    lines = []
    count = busy = errors = 0
    deadline = time.monotonic() + seconds
    index = 0
    while time.monotonic() < deadline:
        payload = json.dumps({"external_id": f"py-{pid}-{index % 50}", "name": "bench_event", "properties": {"n": index}})
        waited = run_delay_ns()
        start = time.monotonic_ns()
        try:
            db.execute(sql, ("event", payload, f"py-{pid}-{index}"))
            count += 1
            end = time.monotonic_ns()
            lines.append(f"{(end - start) // 1000} {start // 1000} {(run_delay_ns() - waited) // 1000}")
        except sqlite3.OperationalError:
            busy += 1
        except sqlite3.Error:
            errors += 1
        index += 1
    db.close()
    sys.stdout.write(f"{count} {busy} {errors}\n" + "\n".join(lines) + ("\n" if lines else ""))


if __name__ == "__main__":
    main()
