-- EventQueue schema, version 3: every stored number has a range.
-- Any writer in the group can write this file with any SQLite client, so the library never relies on these
-- checks (it range-checks every value where it reads it: StoredRow.swift); they stop honest mistakes of foreign
-- writers at the INSERT, where the writer sees the error. SQLite cannot add a CHECK to a table, so the tables
-- are rebuilt: rows are copied with each value brought into its range, an id out of range gets a new one, and
-- the AUTOINCREMENT counter is carried over so that ids never repeat. The copy costs about a second per
-- 100,000 queued records, once (docs/SCHEMA.md).
CREATE TABLE records_v3 (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id BETWEEN 1 AND 4611686018427387904),
    kind                TEXT    NOT NULL CHECK (kind IN ('event', 'attribute', 'purchase')),
    payload             TEXT    NOT NULL CHECK (json_valid(payload) AND json_type(payload) = 'object'),
    user_key            TEXT    NOT NULL GENERATED ALWAYS AS (
        CASE
            WHEN json_type(payload, '$.external_id') = 'text'
                THEN 'external_id:' || json_extract(payload, '$.external_id')
            WHEN json_type(payload, '$.braze_id') = 'text'
                THEN 'braze_id:' || json_extract(payload, '$.braze_id')
            WHEN json_type(payload, '$.user_alias') = 'object'
                THEN 'user_alias:' || json_extract(payload, '$.user_alias.alias_label') || ':'
                    || json_extract(payload, '$.user_alias.alias_name')
            WHEN json_type(payload, '$.email') = 'text'
                THEN 'email:' || json_extract(payload, '$.email')
            WHEN json_type(payload, '$.phone') = 'text'
                THEN 'phone:' || json_extract(payload, '$.phone')
        END
    ) STORED,
    -- Times are Unix milliseconds from 1970 to the end of year 9999.
    created_at_ms       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
        CHECK (created_at_ms BETWEEN 0 AND 253402300799999),
    idempotency_key     TEXT    CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
    state               TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'dead')),
    attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts BETWEEN 0 AND 1000000),
    next_attempt_at_ms  INTEGER NOT NULL DEFAULT 0 CHECK (next_attempt_at_ms BETWEEN 0 AND 253402300799999),
    lease_owner         TEXT,
    lease_expires_at_ms INTEGER CHECK (lease_expires_at_ms BETWEEN 0 AND 253402300799999),
    last_error          TEXT,
    dead_at_ms          INTEGER CHECK (dead_at_ms BETWEEN 0 AND 253402300799999),
    CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at_ms IS NOT NULL)),
    CHECK ((state = 'dead') = (dead_at_ms IS NOT NULL))
) STRICT;
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'records_v3', min(max(seq, 0), 4611686018427387904) FROM sqlite_sequence WHERE name = 'records';
INSERT INTO records_v3 (id, kind, payload, created_at_ms, idempotency_key, state, attempts, next_attempt_at_ms,
        lease_owner, lease_expires_at_ms, last_error, dead_at_ms)
    SELECT CASE WHEN id BETWEEN 1 AND 4611686018427387904 THEN id END, kind, payload,
        min(max(created_at_ms, 0), 253402300799999), idempotency_key, state, min(max(attempts, 0), 1000000),
        min(max(next_attempt_at_ms, 0), 253402300799999), lease_owner,
        min(max(lease_expires_at_ms, 0), 253402300799999), last_error, min(max(dead_at_ms, 0), 253402300799999)
    FROM records ORDER BY id;
DROP TABLE records;
ALTER TABLE records_v3 RENAME TO records;
CREATE INDEX records_live ON records (id, state, next_attempt_at_ms, lease_expires_at_ms)
    WHERE state != 'dead';
CREATE INDEX records_user ON records (user_key, id, state, next_attempt_at_ms, lease_expires_at_ms)
    WHERE state != 'dead';
CREATE UNIQUE INDEX records_idempotency ON records (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX records_dead ON records (id) WHERE state = 'dead';

CREATE TABLE delivered_keys_v3 (
    idempotency_key TEXT    PRIMARY KEY,
    record_id       INTEGER NOT NULL,
    delivered_at_ms INTEGER NOT NULL CHECK (delivered_at_ms BETWEEN 0 AND 253402300799999)
) STRICT, WITHOUT ROWID;
INSERT INTO delivered_keys_v3 (idempotency_key, record_id, delivered_at_ms)
    SELECT idempotency_key, record_id, min(max(delivered_at_ms, 0), 253402300799999) FROM delivered_keys;
DROP TABLE delivered_keys;
ALTER TABLE delivered_keys_v3 RENAME TO delivered_keys;
CREATE INDEX delivered_keys_age ON delivered_keys (delivered_at_ms);
