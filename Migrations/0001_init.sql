-- EventQueue schema, version 1.
-- The single source of truth for the queue file's layout: the binaries embed this file at build time and
-- apply it inside one BEGIN IMMEDIATE transaction together with PRAGMA user_version = 1.
-- Foreign writers: see docs/SCHEMA.md for the one INSERT statement to use.

-- One row per record still to deliver (pending), in flight (leased) or given up on (dead).
CREATE TABLE records (
    -- AUTOINCREMENT: ids never repeat, even after the newest rows are deleted, so id order is enqueue order.
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    kind                TEXT    NOT NULL CHECK (kind IN ('event', 'attribute', 'purchase')),
    -- The Braze object exactly as it will be sent, identifier included.
    payload             TEXT    NOT NULL CHECK (json_valid(payload) AND json_type(payload) = 'object'),
    -- The user the record is about, derived from the payload so that foreign writers cannot get it wrong.
    -- Records of one user are delivered in id order. Must match UserIdentity.orderingKey.
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
    -- When the writer recorded it (UTC, Unix milliseconds): the time of the interaction, not of delivery.
    created_at_ms       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)),
    -- Optional writer-chosen key; a second enqueue with the same key is a no-op that returns the first id.
    idempotency_key     TEXT    CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 255),
    state               TEXT    NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'dead')),
    attempts            INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- A pending record is claimable once now >= next_attempt_at_ms (0: at once).
    next_attempt_at_ms  INTEGER NOT NULL DEFAULT 0,
    -- A leased record belongs to lease_owner until lease_expires_at_ms; after that anyone may claim it again.
    lease_owner         TEXT,
    lease_expires_at_ms INTEGER,
    last_error          TEXT,
    dead_at_ms          INTEGER,
    CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at_ms IS NOT NULL)),
    CHECK ((state = 'dead') = (dead_at_ms IS NOT NULL))
) STRICT;

-- Claiming walks live records in id order: dead rows (kept until purged) are not in this index, so a pile of
-- dead letters never slows a claim. See ConsumerSQL.claim and its EXPLAIN QUERY PLAN test
-- (ClaimQueryPlanTests).
CREATE INDEX records_live ON records (id, state, next_attempt_at_ms, lease_expires_at_ms)
    WHERE state != 'dead';

-- Per-user ordering: "is there an earlier live record of this user that is not claimable yet?" is one probe.
CREATE INDEX records_user ON records (user_key, id, state, next_attempt_at_ms, lease_expires_at_ms)
    WHERE state != 'dead';

-- Idempotency keys are unique; records without one (most) cost no index entry. Writers use
-- ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING (docs/SCHEMA.md).
CREATE UNIQUE INDEX records_idempotency ON records (idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Dead letters listed in order for `queuectl dead list`.
CREATE INDEX records_dead ON records (id) WHERE state = 'dead';

-- Idempotency keys of records already delivered (acked rows are deleted), kept for a retention window so a
-- writer retrying after an ambiguous failure still gets "already enqueued" after delivery.
CREATE TABLE delivered_keys (
    idempotency_key TEXT    PRIMARY KEY,
    record_id       INTEGER NOT NULL,
    delivered_at_ms INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX delivered_keys_age ON delivered_keys (delivered_at_ms);
