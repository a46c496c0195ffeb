-- EventQueue schema, version 6: idempotency keys scoped to the user, and a bound on the payloads writers insert.
-- Additive (docs/SCHEMA.md, "Compatibility"): both levels stay 1, so 1.1.0 writers and daemons keep using the file.
--
-- Keys. records_idempotency made a key unique across all users, so a campaign's push id used as the key for a
-- second user silently returned the first user's record (issue 22 #6). Writers from this release put the key in
-- user_idempotency_key instead, unique per user (records_user_idempotency), and keep the record's digest
-- (record_digest: FNV-1a 64 of kind, a NUL and the payload) so that reusing a key for another record of the same
-- user is refused, also after delivery (delivered_user_keys). The global column, index and delivered_keys stay for
-- older writers, whose documented INSERT names that ON CONFLICT target: among themselves they keep the global rule.
--
-- Payloads. SQLite cannot add a table CHECK and migrations may not add triggers (every binary refuses them), but
-- ADD COLUMN may carry a CHECK on any column: payload_at_most_256_kib refuses a payload longer than
-- RecordEncoder.maximumPayloadBytes at the INSERT, with its name in the error. The consumer never relies on it
-- (it reads sizes from row headers at claim). Rows already larger are replaced by the consumer's stub first, since
-- ADD COLUMN checks existing rows.
UPDATE records SET payload = '{"external_id":"","eventqueue_dropped_payload_bytes":'
        || length(CAST(payload AS BLOB)) || '}',
    state = 'dead', dead_at_ms = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER),
    last_error = 'dropped by migration 6: its payload is ' || length(CAST(payload AS BLOB))
        || ' bytes, more than the 262144 a record can be (written by a foreign writer)',
    lease_owner = NULL, lease_expires_at_ms = NULL
WHERE length(CAST(payload AS BLOB)) > 262144;
ALTER TABLE records ADD COLUMN user_idempotency_key TEXT CHECK (user_idempotency_key IS NULL OR length(user_idempotency_key) BETWEEN 1 AND 255) CONSTRAINT payload_at_most_256_kib CHECK (length(CAST(payload AS BLOB)) <= 262144);
ALTER TABLE records ADD COLUMN record_digest INTEGER;
-- Keys queued before this migration keep deduplicating, now per user as well.
UPDATE records SET user_idempotency_key = idempotency_key WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX records_user_idempotency ON records (user_key, user_idempotency_key)
    WHERE user_idempotency_key IS NOT NULL;

-- Keys of delivered records, per user, with the record's digest (NULL: unknown, taken as the same record).
-- user_key '' marks a key delivered before this migration, whose user the file never recorded: it still
-- deduplicates for every user until it expires (at most the 7-day retention), as it did before.
CREATE TABLE delivered_user_keys (
    user_key        TEXT    NOT NULL,
    idempotency_key TEXT    NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    record_id       INTEGER NOT NULL,
    record_digest   INTEGER,
    delivered_at_ms INTEGER NOT NULL CHECK (delivered_at_ms BETWEEN 0 AND 253402300799999),
    PRIMARY KEY (user_key, idempotency_key)
) STRICT, WITHOUT ROWID;
CREATE INDEX delivered_user_keys_age ON delivered_user_keys (delivered_at_ms);
INSERT OR IGNORE INTO delivered_user_keys (user_key, idempotency_key, record_id, record_digest, delivered_at_ms)
    SELECT '', idempotency_key, record_id, NULL, delivered_at_ms FROM delivered_keys
    WHERE length(idempotency_key) BETWEEN 1 AND 255;

INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (6, 1, 1, '1.2.0');
