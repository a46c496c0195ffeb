-- EventQueue schema, version 2: the drain lock.
-- At most one drain pass runs on a queue file at a time, across processes and hosts sharing the file: a
-- pass holds this single row (owner + expiry) and renews it while it runs. A crashed drainer's lock simply
-- expires. It is a lease in the file rather than a process-local flag, so two daemons (or a daemon and
-- `queuectl drain --local`) pointed at one file never drain it at once.
CREATE TABLE drain_lock (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    owner         TEXT    NOT NULL,
    acquired_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
) STRICT;
