-- EventQueue schema, version 4: claiming a record no longer rewrites its user's index entry.
-- records_user carried the lease columns (state, next_attempt_at_ms, lease_expires_at_ms), so every claim
-- rewrote one index entry per record, and with many users those entries sit on as many different pages: a
-- claim of 75 records for 75 users wrote about 80 pages to the WAL, as much as the ack that follows it
-- (docs/PERFORMANCE.md section 9). The per-user probe needs only (user_key, id) from the index and reads the
-- state from the row. The partial-index condition is dead_at_ms, which a claim, renewal or release never
-- changes, so those statements leave this index alone; dead_at_ms IS NULL exactly when the record is live
-- (the table's CHECK), so dead letters stay out of it as before. Writers insert a smaller entry than before.
DROP INDEX records_user;
CREATE INDEX records_user_order ON records (user_key, id) WHERE dead_at_ms IS NULL;
