-- EventQueue schema, version 8: one filing key per identity (issue 39 #1), the queue clock the max age is
-- measured on (issue 39 #2), and the identity calls (issue 41: kinds 'identify', 'alias' and 'merge', filed under two
-- users, user_key and other_user_key; a read level 2 consumer would send them to /users/track, so it must refuse).
--
-- Up to 7 an alias was filed as 'user_alias:' || label || ':' || name, so label 'a' + name 'b:c' and label 'a:b' +
-- name 'c' were one user to the queue: `forget` of one erased the other's records, and a key of one refused the
-- other's record. Now a label that holds a colon is written in hex ('user_alias#' || hex(label) || ':' || name):
-- hex has no colon, and the 'user_alias#' prefix is no other identity's, so every (label, name) has its own key.
-- A label without a colon (nearly all: 'device_id', 'amplitude_id') keeps its old key, so a 1.1.0-1.3.0 writer,
-- which computes keys the old way to look up its idempotency keys, still finds them; only for a colon in the label
-- does its lookup miss (a retry of such a record may be queued twice, as the old key could not tell the users
-- apart either). Every other identity keeps its key: 'external_id:', 'braze_id:', 'email:' and 'phone:' are
-- prefixes none of which begins another, and the value is the rest of the key.
--
-- SQLite cannot change a generated column, so `records` is rebuilt as migration 3 did (a copy of every row, about a
-- second per 100,000 queued records, once); ids and the AUTOINCREMENT counter are kept. Keys remembered for
-- delivered records (delivered_user_keys) keep the key their record had: an old key with more than one colon cannot
-- be split back into label and name. Levels: write level 2: the columns, defaults and conflict targets are the
-- same (a writer following docs/SCHEMA.md keeps writing), but a 1.1.0-1.3.0 Swift writer checks the definition of
-- `records` and refuses a rebuilt one as a changed schema (`someone with write access changed it`, found by the
-- version matrix's previous-release scenario); the level makes it say which release to upgrade to instead. Read
-- level 3: a consumer of read level 2 knows only the old keys, so it must refuse the file rather than order and
-- erase by keys it would misread.
CREATE TABLE records_v8 (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT CHECK (id BETWEEN 1 AND 4611686018427387904),
    kind                TEXT    NOT NULL
        CHECK (kind IN ('event', 'attribute', 'purchase', 'identify', 'alias', 'merge')),
    payload             TEXT    NOT NULL CHECK (json_valid(payload) AND json_type(payload) = 'object'),
    user_key            TEXT    NOT NULL GENERATED ALWAYS AS (
        CASE
            WHEN json_type(payload, '$.external_id') = 'text'
                THEN 'external_id:' || json_extract(payload, '$.external_id')
            WHEN json_type(payload, '$.braze_id') = 'text'
                THEN 'braze_id:' || json_extract(payload, '$.braze_id')
            WHEN json_type(payload, '$.user_alias') = 'object' THEN
                CASE
                    WHEN json_type(payload, '$.user_alias.alias_label') = 'text'
                        AND json_type(payload, '$.user_alias.alias_name') = 'text' THEN
                        CASE
                            WHEN instr(json_extract(payload, '$.user_alias.alias_label'), ':') = 0
                                THEN 'user_alias:' || json_extract(payload, '$.user_alias.alias_label') || ':'
                                    || json_extract(payload, '$.user_alias.alias_name')
                            ELSE 'user_alias#' || hex(json_extract(payload, '$.user_alias.alias_label')) || ':'
                                || json_extract(payload, '$.user_alias.alias_name')
                        END
                    -- A member missing or null names no user: the INSERT is refused, as before.
                    WHEN json_extract(payload, '$.user_alias.alias_label') IS NULL
                        OR json_extract(payload, '$.user_alias.alias_name') IS NULL THEN NULL
                    -- A member of another type (only a foreign writer's; Braze refuses it, and the consumer
                    -- dead-letters it): the whole alias as SQLite prints it, under a prefix no valid alias has.
                    ELSE 'user_alias?' || json_extract(payload, '$.user_alias')
                END
            WHEN json_type(payload, '$.email') = 'text'
                THEN 'email:' || json_extract(payload, '$.email')
            WHEN json_type(payload, '$.phone') = 'text'
                THEN 'phone:' || json_extract(payload, '$.phone')
        END
    ) STORED,
    -- An identity call (kind 'identify', 'alias' or 'merge', issue 41) names a second user, under the member named
    -- after its kind ({"external_id":"U1","identify":{"user_alias":{...}}}): filed by the rule of user_key, so the row
    -- is in the streams of both users. NULL for every other row (the partial index holds only identity calls).
    -- STORED: the claim reads it for every candidate, and computing it there cost about 33 VM steps a row (of 32 before).
    other_user_key      TEXT    GENERATED ALWAYS AS (
        CASE WHEN kind IN ('identify', 'alias', 'merge') THEN
            CASE
                WHEN json_type(payload, '$.' || kind || '.external_id') = 'text'
                    THEN 'external_id:' || json_extract(payload, '$.' || kind || '.external_id')
                WHEN json_type(payload, '$.' || kind || '.braze_id') = 'text'
                    THEN 'braze_id:' || json_extract(payload, '$.' || kind || '.braze_id')
                WHEN json_type(payload, '$.' || kind || '.user_alias') = 'object' THEN
                    CASE
                        WHEN json_type(payload, '$.' || kind || '.user_alias.alias_label') = 'text'
                            AND json_type(payload, '$.' || kind || '.user_alias.alias_name') = 'text' THEN
                            CASE
                                WHEN instr(json_extract(payload, '$.' || kind || '.user_alias.alias_label'), ':') = 0
                                    THEN 'user_alias:' || json_extract(payload, '$.' || kind || '.user_alias.alias_label') || ':'
                                        || json_extract(payload, '$.' || kind || '.user_alias.alias_name')
                                ELSE 'user_alias#' || hex(json_extract(payload, '$.' || kind || '.user_alias.alias_label')) || ':'
                                    || json_extract(payload, '$.' || kind || '.user_alias.alias_name')
                            END
                        -- A member missing or null names no user: the INSERT is refused, as before.
                        WHEN json_extract(payload, '$.' || kind || '.user_alias.alias_label') IS NULL
                            OR json_extract(payload, '$.' || kind || '.user_alias.alias_name') IS NULL THEN NULL
                        -- A member of another type (only a foreign writer's; Braze refuses it, and the consumer
                        -- dead-letters it): the whole alias as SQLite prints it, under a prefix no valid alias has.
                        ELSE 'user_alias?' || json_extract(payload, '$.' || kind || '.user_alias')
                    END
                WHEN json_type(payload, '$.' || kind || '.email') = 'text'
                    THEN 'email:' || json_extract(payload, '$.' || kind || '.email')
                WHEN json_type(payload, '$.' || kind || '.phone') = 'text'
                    THEN 'phone:' || json_extract(payload, '$.' || kind || '.phone')
            END
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
    user_idempotency_key TEXT   CHECK (user_idempotency_key IS NULL OR length(user_idempotency_key) BETWEEN 1 AND 255)
        CONSTRAINT payload_at_most_256_kib CHECK (length(CAST(payload AS BLOB)) <= 262144),
    record_digest       INTEGER,
    erasure             TEXT,
    CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at_ms IS NOT NULL)),
    CHECK ((state = 'dead') = (dead_at_ms IS NOT NULL))
) STRICT;
INSERT INTO sqlite_sequence (name, seq) SELECT 'records_v8', seq FROM sqlite_sequence WHERE name = 'records';
INSERT INTO records_v8 (id, kind, payload, created_at_ms, idempotency_key, state, attempts, next_attempt_at_ms,
        lease_owner, lease_expires_at_ms, last_error, dead_at_ms, user_idempotency_key, record_digest, erasure)
    SELECT id, kind, payload, created_at_ms, idempotency_key, state, attempts, next_attempt_at_ms, lease_owner,
        lease_expires_at_ms, last_error, dead_at_ms, user_idempotency_key, record_digest, erasure
    FROM records ORDER BY id;
DROP TABLE records;
ALTER TABLE records_v8 RENAME TO records;
CREATE INDEX records_live ON records (id, state, next_attempt_at_ms, lease_expires_at_ms)
    WHERE state != 'dead';
CREATE UNIQUE INDEX records_idempotency ON records (idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX records_dead ON records (id) WHERE state = 'dead';
CREATE UNIQUE INDEX records_user_idempotency ON records (user_key, user_idempotency_key)
    WHERE user_idempotency_key IS NOT NULL;
CREATE INDEX records_other_user ON records (other_user_key, id) WHERE other_user_key IS NOT NULL;
-- Barriers (erasures and identity calls) are in it dead or alive: a dead one still holds its users (issue 40 #4).
CREATE INDEX records_user_order ON records (user_key, id)
    WHERE (dead_at_ms IS NULL AND (state = 'leased' OR next_attempt_at_ms > 0)) OR erasure IS NOT NULL
        OR other_user_key IS NOT NULL;

-- The queue clock (issue 39 #2), so that no clock can make a record older than it is: the max age is measured on a
-- clock of the queue's own, advanced only by the host's monotonic clock, and a record's age is that of the first
-- checkpoint that saw its id; writers' `created_at_ms` plays no part in it. Two tables no older binary reads.
-- One row: how long the queue has existed on its own clock (`elapsed_ms`), and where that clock stood when it was
-- last written: the host's boot (`boot_id`, /proc/sys/kernel/random/boot_id), the monotonic clock since that boot
-- counting suspend (`boot_ms`, CLOCK_BOOTTIME) and the wall clock (`wall_ms`, used only to count the time between
-- two boots, which no monotonic clock survives). Written by consumers (the daemon, `queuectl drain --local`).
CREATE TABLE queue_clock (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    elapsed_ms INTEGER NOT NULL CHECK (elapsed_ms >= 0),
    boot_id    TEXT    NOT NULL,
    boot_ms    INTEGER NOT NULL,
    wall_ms    INTEGER NOT NULL
) STRICT;

-- "At queue time elapsed_ms, the highest record id ever assigned was max_id": ids are AUTOINCREMENT (never
-- reused), so every record up to max_id existed then, and its age is at least the time since. Taken when the
-- highest id changed only (an idle queue writes none); those that can no longer be the max age's cutoff are
-- deleted.
CREATE TABLE queue_clock_checkpoints (
    elapsed_ms INTEGER PRIMARY KEY,
    max_id     INTEGER NOT NULL
) STRICT;

INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (8, 2, 3, '1.4.0');
