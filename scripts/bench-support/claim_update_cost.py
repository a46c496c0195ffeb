#!/usr/bin/env python3
"""What the claim's UPDATE costs per row, and how much of it is SQLite recomputing the stored `user_key`.

SQLite recomputes every STORED generated column of a row that an UPDATE touches, whichever columns it sets: the
claim (`RecordStateSQL.claimByIDs`) sets only the state and the lease, yet evaluates `user_key`'s JSON expressions
on the whole payload again. This copies the records of a queue file (made by `queuectl enqueue`) into two in-memory
databases, one with the file's own `records` table and indexes, one with `user_key` a plain column holding the same
values, and runs the claim's UPDATE on both in batches of 75 (CPU time of this process; the two alternate, three
rounds). The difference is what a schema without the generated column (a new level: SCHEMA.md, "Compatibility")
would save per claimed record.

Usage: claim_update_cost.py QUEUE_FILE [--rows N]
"""
import re
import sqlite3
import sys
import time

CLAIM = """UPDATE records SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2
           WHERE id IN (SELECT value FROM json_each(?3)) AND state != 'dead'"""


def copy(source, rows, generated):
    table = source.execute("SELECT sql FROM sqlite_schema WHERE name = 'records'").fetchone()[0]
    if not generated:
        table, replaced = re.subn(r"GENERATED ALWAYS AS \((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\s*STORED", "", table)
        if replaced != 1: sys.exit("claim_update_cost: the records table has no stored user_key to replace")
    indexes = [sql for (sql,) in source.execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL")]
    db = sqlite3.connect(":memory:")
    db.execute(table)
    for sql in indexes: db.execute(sql)
    db.execute("PRAGMA ignore_check_constraints = ON")  # as the consumer updates
    columns = [name for (_, name, *_) in db.execute("PRAGMA table_info(records)")]
    wanted = [c for c in columns if not generated or c != "user_key"]
    select = f"SELECT {', '.join(wanted)} FROM records ORDER BY id LIMIT ?"
    db.executemany(f"INSERT INTO records ({', '.join(wanted)}) VALUES ({', '.join('?' * len(wanted))})",
                   source.execute(select, (rows,)))
    db.commit()
    return db


def claim_all(db):
    ids = [i for (i,) in db.execute("SELECT id FROM records WHERE state = 'pending' ORDER BY id")]
    start = time.process_time()
    for at in range(0, len(ids), 75):
        batch = ids[at:at + 75]
        db.execute(CLAIM, (f"bench#{at}", 4_000_000_000_000, "[" + ",".join(map(str, batch)) + "]"))
    db.commit()
    return (time.process_time() - start) / max(1, len(ids)) * 1e6, len(ids)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"): sys.exit(__doc__)
    path, rows = args[0], 30_000
    if "--rows" in args: rows = int(args[args.index("--rows") + 1])
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    results = {True: [], False: []}
    for _ in range(3):
        for generated in (True, False):
            cost, count = claim_all(copy(source, rows, generated))
            results[generated].append(cost)
    with_generated, plain = min(results[True]), min(results[False])
    print(f"claim UPDATE, {count} rows in batches of 75 (least of 3, µs of CPU per row): with the stored user_key "
          f"{with_generated:.2f}, with a plain column {plain:.2f}; the recomputation {with_generated - plain:.2f} "
          f"µs per row, {100 * (with_generated - plain) / with_generated:.0f} % of the statement")


if __name__ == "__main__":
    main()
