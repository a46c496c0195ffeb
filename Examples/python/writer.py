#!/usr/bin/env python3
"""A foreign writer in Python (the standard sqlite3 module), following docs/SCHEMA.md.

Usage: writer.py QUEUE_PATH EXTERNAL_ID EVENT_NAME IDEMPOTENCY_KEY
docs/WRITERS.md walks through it; Tests/queuectlTests/WriterExamplesTests runs it and drains what it wrote.
"""
import json
import sqlite3
import sys

path, external_id, name, key = sys.argv[1:5]
try:
    # mode=rw: never create the file (the daemon, queuectl or the library create it with its schema).
    # timeout=5.0 is the busy timeout; isolation_level=None: each statement commits on its own.
    db = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=5.0, isolation_level=None)
    db.execute("PRAGMA synchronous = FULL")
    db.execute(
        "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
        "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
        ("event", json.dumps({"external_id": external_id, "name": name, "properties": {"source": "python"}}), key),
    )
    db.close()
except sqlite3.IntegrityError as error:  # refused by the table's checks: fix the record
    sys.exit(f"record refused: {error}")
except sqlite3.OperationalError as error:  # "database is locked" after 5 s: retry later with the same key
    print(f"cannot enqueue, retry with the same key: {error}", file=sys.stderr)
    sys.exit(75)
