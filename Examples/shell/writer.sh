#!/bin/sh
# A foreign writer in shell with the sqlite3 command-line tool, following docs/SCHEMA.md.
# Usage: writer.sh QUEUE_PATH EXTERNAL_ID EVENT_NAME IDEMPOTENCY_KEY
# docs/WRITERS.md walks through it; Tests/queuectlTests/WriterExamplesTests runs it and drains what it wrote.
set -eu
db=$1 user=$2 name=$3 key=$4
# sqlite3 would create a missing file (without the schema): the queue must exist already.
[ -f "$db" ] || { echo "writer.sh: no queue at $db" >&2; exit 66; }
# A value as an SQL string literal: quotes doubled, so no input can end the literal early.
sql_text() { printf "'%s'" "$(printf %s "$1" | sed "s/'/''/g")"; }
# ".timeout 5000" rather than "PRAGMA busy_timeout = 5000": that pragma prints its new value (5000) on stdout.
# -bail: stop at the first error, with a non-zero exit status.
sqlite3 -bail -cmd ".timeout 5000" "$db" <<SQL
PRAGMA synchronous = FULL;
INSERT INTO records (kind, payload, idempotency_key)
VALUES ('event',
        json_object('external_id', $(sql_text "$user"), 'name', $(sql_text "$name"),
                    'properties', json_object('source', 'shell')),
        $(sql_text "$key"))
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING;
SQL
