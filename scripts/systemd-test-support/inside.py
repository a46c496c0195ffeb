#!/usr/bin/env python3
"""Helpers that scripts/systemd-test runs inside the booted container (Debian's python3, no extra packages).

  inside.py foreign-writer DB MARKER COUNT PAUSE_MS   a docs/SCHEMA.md writer: one INSERT per record, one
                                                       connection held open for the whole run
  inside.py held-writer DB MARKER PIDFILE SECONDS     commits one record (MARKER-0), writes its PID to PIDFILE,
                                                       then holds its connection open for SECONDS
  inside.py killed-writer DB MARKER                   commits one record (MARKER-0) and SIGKILLs itself: the record
                                                       stays in the -wal, no connection closes it
  inside.py http-get SOCKET PATH                      GET over the control socket; prints the body
  inside.py delivered FILE                            prints the delivered markers of a jsonl sink file, one a line
  inside.py wait-lines FILE N TIMEOUT                 waits until FILE has at least N lines
  inside.py count DB                                  prints the records left in the queue file (read-only)
  inside.py schema-version DB                         prints the queue file's user_version (read-only)
  inside.py ndjson FILE PREFIX COUNT                  writes COUNT event lines marked PREFIX-0... (mode 0644)
"""
import json
import os
import signal
import socket
import sqlite3
import sys
import time


def foreign_writer(db, marker, count, pause_ms):
    connection = sqlite3.connect(db, timeout=10, isolation_level=None)
    connection.execute("PRAGMA busy_timeout = 10000")
    for index in range(int(count)):
        payload = {"external_id": f"{marker}-user{index % 3}", "name": "foreign", "properties": {"marker": f"{marker}-{index}"}}
        connection.execute(
            "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
            "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
            ("event", json.dumps(payload), None))
        time.sleep(int(pause_ms) / 1000)
    connection.close()


def commit_one(db, marker):
    """The docs/SCHEMA.md writer's one INSERT, committed (autocommit); the connection stays open."""
    connection = sqlite3.connect(db, timeout=10, isolation_level=None)
    connection.execute("PRAGMA busy_timeout = 10000")
    connection.execute("PRAGMA synchronous = FULL")
    payload = {"external_id": f"{marker}-user", "name": "foreign", "properties": {"marker": f"{marker}-0"}}
    connection.execute(
        "INSERT INTO records (kind, payload, idempotency_key) VALUES (?, ?, ?) "
        "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
        ("event", json.dumps(payload), None))
    return connection


def held_writer(db, marker, pid_file, seconds):
    connection = commit_one(db, marker)
    with open(pid_file + ".tmp", "w") as handle:
        handle.write(f"{os.getpid()}\n")
    os.rename(pid_file + ".tmp", pid_file)
    time.sleep(float(seconds))
    connection.close()


def killed_writer(db, marker):
    commit_one(db, marker)
    os.kill(os.getpid(), signal.SIGKILL)


def http_get(path_to_socket, path):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path_to_socket)
    client.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = client.recv(65536)
        if not chunk:
            break
        data += chunk
    sys.stdout.write(data.decode(errors="replace"))


def delivered(path):
    with open(path) as handle:
        for line in handle:
            record = json.loads(line)
            marker = record["object"].get("properties", {}).get("marker")
            print(marker if marker else f"id-{record['id']}")


def wait_lines(path, n, timeout):
    deadline = time.monotonic() + float(timeout)
    while time.monotonic() < deadline:
        try:
            with open(path) as handle:
                if sum(1 for _ in handle) >= int(n):
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    sys.exit(f"{path} did not reach {n} lines within {timeout} s")


def count(db):
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    print(connection.execute("SELECT count(*) FROM records").fetchone()[0])


def schema_version(db):
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    print(connection.execute("PRAGMA user_version").fetchone()[0])


def ndjson(path, prefix, n):
    with open(path, "w") as handle:
        for index in range(int(n)):
            handle.write(json.dumps({"type": "event", "external_id": f"{prefix}-u{index % 7}", "name": "bulk",
                                     "properties": {"marker": f"{prefix}-{index}"}}) + "\n")
    os.chmod(path, 0o644)


commands = {"foreign-writer": foreign_writer, "held-writer": held_writer, "killed-writer": killed_writer,
            "http-get": http_get, "delivered": delivered,
            "wait-lines": wait_lines, "count": count, "schema-version": schema_version, "ndjson": ndjson}
commands[sys.argv[1]](*sys.argv[2:])
