// cfloor: the C floor of `queuectl drain --local --sink null --batch-size N` (issue 34), for scripts/perf-guard.
// The same pragmas as the library's consumer (WAL, synchronous FULL, a 32 MiB page cache), and per batch one
// transaction: BEGIN IMMEDIATE; claim the oldest N live rows (UPDATE ... RETURNING, every column read out);
// DELETE them by id (json_each); COMMIT. No per-user order, no keys, no lease check: what claiming and deleting
// a batch costs SQLite at the least, so the ratio prices everything the library adds.
//
//   cfloor DB [BATCH]      prints: records=N batches=N
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sqlite3 *db;

static void die(const char *what) {
    fprintf(stderr, "cfloor: %s: %s\n", what, db ? sqlite3_errmsg(db) : "");
    exit(1);
}

static void exec(const char *sql) {
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) die(sql);
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) != SQLITE_OK) die(sql);
    return statement;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cfloor DB [BATCH]\n");
        return 64;
    }
    int batch = argc > 2 ? atoi(argv[2]) : 75;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die("open");
    sqlite3_busy_timeout(db, 5000);
    exec("PRAGMA journal_mode = WAL");
    exec("PRAGMA synchronous = FULL");
    exec("PRAGMA cache_size = -32768");
    sqlite3_stmt *claim = prepare(
        "UPDATE records SET state = 'leased', lease_owner = ?1, lease_expires_at_ms = ?2 "
        "WHERE id IN (SELECT id FROM records WHERE state != 'dead' ORDER BY id LIMIT ?3) "
        "RETURNING id, kind, payload, user_key, created_at_ms, attempts");
    sqlite3_stmt *delete = prepare("DELETE FROM records WHERE id IN (SELECT value FROM json_each(?1))");
    long records = 0, batches = 0;
    char *list = malloc((size_t)batch * 24 + 4);
    char token[64];
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        exec("BEGIN IMMEDIATE");
        snprintf(token, sizeof token, "cfloor#%ld", batches);
        sqlite3_bind_text(claim, 1, token, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(claim, 2, ms + 60000);
        sqlite3_bind_int(claim, 3, batch);
        size_t used = 0;
        int rows = 0;
        list[used++] = '[';
        while (sqlite3_step(claim) == SQLITE_ROW) {
            // Read every column out, as the library does (the payload is copied into its record).
            volatile size_t bytes = 0;
            for (int column = 1; column < 4; column++) bytes += (size_t)sqlite3_column_bytes(claim, column);
            (void)sqlite3_column_text(claim, 2);
            (void)sqlite3_column_int64(claim, 4);
            (void)sqlite3_column_int64(claim, 5);
            used += (size_t)sprintf(list + used, rows ? ",%lld" : "%lld", (long long)sqlite3_column_int64(claim, 0));
            rows++;
        }
        if (sqlite3_reset(claim) != SQLITE_OK) die("claim");
        list[used++] = ']';
        list[used] = 0;
        if (rows == 0) {
            exec("COMMIT");
            break;
        }
        sqlite3_bind_text(delete, 1, list, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(delete) != SQLITE_DONE) die("delete");
        sqlite3_reset(delete);
        exec("COMMIT");
        records += rows;
        batches++;
    }
    printf("records=%ld batches=%ld\n", records, batches);
    sqlite3_close(db);
    return 0;
}
