-- EventQueue schema, version 5: the file says which releases may write and consume it.
-- Writers and the daemon of different releases share one file (apps ship writers, the host ships queued), so a
-- binary meets files migrated by newer releases. Instead of refusing every user_version above its own, a binary
-- reads two levels here, in the spirit of SQLite's read and write format versions: it writes when the file's
-- write_level is one it implements, consumes when the read_level is, and otherwise refuses with the release to
-- upgrade to. A migration that every older writer and consumer tolerates (docs/SCHEMA.md, "Compatibility") keeps
-- both levels; a breaking one raises the level of the side it breaks. Every migration from this one on adds its
-- row; the newest row is what the file requires.
CREATE TABLE schema_levels (
    version     INTEGER PRIMARY KEY CHECK (version BETWEEN 5 AND 1000000),
    write_level INTEGER NOT NULL CHECK (write_level BETWEEN 1 AND 1000000),
    read_level  INTEGER NOT NULL CHECK (read_level BETWEEN 1 AND 1000000),
    -- The first release that carries this schema version, e.g. '1.1.0': what a refused binary is told to
    -- upgrade to.
    release     TEXT    NOT NULL CHECK (length(release) BETWEEN 1 AND 64)
) STRICT;

-- The tables and indexes that migrations from this one on created (these two tables included), and the tables
-- whose definition they changed (a column added), recorded by the binary that ran them (never written by hand): a
-- binary older than such a migration finds objects it does not know, and tolerates exactly these, with exactly
-- this SQL. Triggers and views never appear here: they run code inside every statement on
-- their table, so no migration may add one and every binary refuses them.
CREATE TABLE schema_additions (
    name     TEXT    PRIMARY KEY,
    version  INTEGER NOT NULL CHECK (version BETWEEN 5 AND 1000000),
    type     TEXT    NOT NULL CHECK (type IN ('table', 'index')),
    tbl_name TEXT    NOT NULL,
    sql      TEXT    NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO schema_levels (version, write_level, read_level, release) VALUES (5, 1, 1, '1.1.0');
