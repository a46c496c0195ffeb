/*
 * A complete foreign writer in C against libsqlite3, following docs/SCHEMA.md: the per-connection pragmas, the
 * one INSERT with an idempotency key, and busy handling. docs/WRITERS.md walks through it;
 * Tests/queuectlTests/WriterExamplesTests compiles it, runs it and drains what it wrote.
 *
 * Build: cc -O2 -o eventqueue-writer writer.c -lsqlite3
 * Usage: eventqueue-writer QUEUE_PATH EXTERNAL_ID EVENT_NAME IDEMPOTENCY_KEY
 * Exit status: 0 written (or already written under that key), 64 usage, 65 refused by the table's checks,
 * 66 no queue at QUEUE_PATH, 75 busy (retry with the same key), 74 any other failure.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static int fail(sqlite3 *db, const char *what, int status) {
    fprintf(stderr, "eventqueue-writer: %s: %s\n", what, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return status;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: eventqueue-writer QUEUE_PATH EXTERNAL_ID EVENT_NAME IDEMPOTENCY_KEY\n");
        return 64;
    }
    sqlite3 *db = NULL;
    /* READWRITE without CREATE: the queue must already exist (the daemon, queuectl or the library create it with
     * its schema). A foreign writer never creates the file or its tables. */
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        return fail(db, "cannot open the queue (does it exist, and may this user write it?)", 66);
    }
    /* Wait up to 5 s for another writer's or the daemon's lock instead of failing with "database is locked". */
    sqlite3_busy_timeout(db, 5000);
    /* A committed record survives power loss. Never change journal_mode: the file is WAL. */
    if (sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL) != SQLITE_OK) {
        return fail(db, "setting synchronous", 74);
    }

    /* The payload is the Braze object itself. Build JSON with SQLite's json_object() so that any name is escaped
     * correctly, whatever it contains. */
    const char *sql =
        "INSERT INTO records (kind, payload, idempotency_key) "
        "VALUES ('event', json_object('external_id', ?1, 'name', ?2, 'properties', json_object('source', 'c')), ?3) "
        "ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING";
    sqlite3_stmt *insert = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &insert, NULL) != SQLITE_OK) {
        return fail(db, "preparing the INSERT (is this a queue file?)", 74);
    }
    sqlite3_bind_text(insert, 1, argv[2], -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 2, argv[3], -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(insert, 3, argv[4], -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(insert);
    int changes = sqlite3_changes(db);
    sqlite3_finalize(insert);
    if (rc == SQLITE_BUSY) {
        /* Still locked after the busy timeout: nothing was written. Retry later with the same key. */
        return fail(db, "queue busy, retry with the same idempotency key", 75);
    }
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
        /* The table refused it: an unknown kind, a payload naming no user, a bad idempotency key. */
        return fail(db, "record refused", 65);
    }
    if (rc != SQLITE_DONE) {
        return fail(db, "enqueueing", 74);
    }
    printf("%s\n", changes == 1 ? "enqueued" : "already enqueued");
    sqlite3_close(db);
    return 0;
}
