-- EventQueue schema, version 7: a queue bounded by size and age, with what it gives up counted (issue 30), and a
-- user's erasure carried to Braze in the user's own stream (issue 31).
--
-- Levels: write level 1 (a 1.1.0-1.3.0 writer keeps appending: it fills in none of what follows, and the daemon
-- enforces the limits after each pass for writers that do not), read level 2: a 1.1.0-1.3.0 daemon would take an
-- erasure row for an attribute record and send it to /users/track, recreating the user it was meant to erase, so
-- an older consumer must refuse the file (naming 1.4.0) rather than skip the erasure (docs/SCHEMA.md,
-- "Compatibility"). Everything here is additive in form (a new column without a constraint, new tables), so an
-- older writer's schema check tolerates it (SchemaContract).

-- An erasure (`queuectl forget --braze-delete`): a row of the user's own stream, so that the claim's per-user order
-- puts it after every earlier record of the user and before every later one, and leases, retries, dead letters,
-- `peek` and `status` treat it as they treat a record. NULL for a record. For an erasure it is a JSON object,
-- {"type": "external_ids" | "braze_ids" | "user_aliases" | "email_addresses" | "phone_numbers", "after": [lease
-- tokens of the user's records that were in flight when it was queued]}; its payload is the user's identifier
-- member alone (so its generated user_key is the user's), and its kind 'attribute' (the column's CHECK allows no
-- other; no consumer of read level 2 sends a row with an erasure to /users/track).
ALTER TABLE records ADD COLUMN erasure TEXT;

-- The operator's limits, as the daemon last started with them (`queued --max-queue-bytes`, `--when-full`,
-- `--max-age-seconds`): one row, written by the daemon at start and read by every writer of 1.4.0 and later at each
-- enqueue, so that the limit holds however many writer processes there are. No row: no limits recorded yet.
CREATE TABLE queue_limits (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    -- 0: no limit beyond the free-space reserve.
    max_queue_bytes INTEGER NOT NULL CHECK (max_queue_bytes >= 0),
    when_full       TEXT    NOT NULL CHECK (when_full IN ('refuse', 'drop-oldest')),
    -- 0: records are kept forever.
    max_age_seconds INTEGER NOT NULL CHECK (max_age_seconds >= 0),
    set_at_ms       INTEGER NOT NULL
) STRICT;

-- Every record the queue ever gave up, by cause, for good: in the file, so that restarts and every writer process
-- add up. 'oldest': dropped to make room (drop-oldest); 'refused': an enqueue refused for the size limit;
-- 'expired': dead-lettered for the age limit.
CREATE TABLE queue_drops (
    cause TEXT    PRIMARY KEY CHECK (cause IN ('oldest', 'refused', 'expired')),
    count INTEGER NOT NULL CHECK (count >= 0)
) STRICT, WITHOUT ROWID;
INSERT INTO queue_drops (cause, count) VALUES ('oldest', 0), ('refused', 0), ('expired', 0);

-- The per-user probe's index holds only the rows that can hold back a later row of their user (issue 34): leased,
-- waiting for a retry (next_attempt_at_ms > 0: a nack; a writer and `dead retry` write 0), or an erasure. A record
-- that is simply pending (nearly all of a backlog) has no entry: a writer inserts none, and its ack deletes none.
-- Before, every record had one, on a page of its own user's, so a batch of 75 records for 75 users dirtied about 75
-- pages of this index at the ack (and again at the enqueue): three quarters of the pages a drain wrote. The index
-- now holds about what is in flight or waiting, a few pages, so a claim's and an ack's entries share them. The
-- claim's probe names this condition (RecordStateSQL.claimCandidates: SQLite uses a partial index only for a query
-- that implies its WHERE) and the erasure's own probe, for any earlier live row, walks records_live instead.
-- The same name and columns: a 1.1.0-1.3.0 writer checks names and types and never reads this index.
DROP INDEX records_user_order;
CREATE INDEX records_user_order ON records (user_key, id)
    WHERE dead_at_ms IS NULL AND (state = 'leased' OR next_attempt_at_ms > 0 OR erasure IS NOT NULL);

INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (7, 1, 2, '1.4.0');
