-- virtflow SQLite store, schema version 23: what each decision was made over
-- (issue 39: `virtflowctl explain TASK_ID --replay`).
--
-- A task's last decision (the one that stuck: a batch decided again rewrites
-- it, in the same transaction as the task row) records, in five integers:
--   decided_snapshot  the inventory_snapshots row holding the exact hosts it
--                     decided over (NULL: that content was not recorded,
--                     inventory.record_decided off, or the view older than
--                     the table's rows)
--   decided_holds     a 64-bit digest of the reservations the engine held
--                     (worker/sched/holds.h holds_entry_digest, summed), as a
--                     signed integer: a replay rebuilds the holds from the
--                     reservation rows and checks them against it
--   decided_config    the engine_configs row of the scheduler section in force
--   decided_clock_ms  the engine's reservation clock (the fetch time of its
--                     inventory, Unix ms): holds that expired by then were gone
--   decided_ms        when the attempt was decided (Unix ms)
-- About 30 bytes a task in SQLite, 40 in PostgreSQL; no index.
--
-- engine_configs keeps each scheduler section once, by the SHA-256 of its
-- canonical JSON (keys sorted), recorded by a worker at start and reload.
-- Snapshots are looked up by content hash when a worker records the same
-- content again.
-- Never edit a released migration: add 024_*.sql instead.

ALTER TABLE tasks ADD COLUMN decided_snapshot INTEGER;
ALTER TABLE tasks ADD COLUMN decided_holds INTEGER;
ALTER TABLE tasks ADD COLUMN decided_config INTEGER;
ALTER TABLE tasks ADD COLUMN decided_clock_ms INTEGER;
ALTER TABLE tasks ADD COLUMN decided_ms INTEGER;

CREATE TABLE engine_configs (
    id          INTEGER PRIMARY KEY,
    digest      TEXT NOT NULL UNIQUE,  -- hex SHA-256 of body
    recorded_at TEXT NOT NULL,         -- first recorded (store time format)
    body        TEXT NOT NULL          -- JSON: {"scheduler": {...}} as the worker's file had it
);

CREATE INDEX inventory_snapshots_by_hash ON inventory_snapshots (content_hash);
