-- virtflow SQLite store, schema version 7: indexes for retention.
--
-- The worker's retention job (worker/retention.c, store.retention) and
-- `virtflowctl prune` delete, in small batches, final tasks with their
-- history, released reservations, confirmed outbox events and finished
-- deliveries older than a cutoff. Each batch finds its rows through these
-- indexes, so its cost follows the rows it deletes, not the size of the
-- tables (a scan would hold the write lock for as long as the table is big).
-- Never edit a released migration: add 008_*.sql instead.
--
-- auto_vacuum cannot be switched on by a migration: SQLite only accepts it on
-- a database without tables, or with a VACUUM that rewrites the whole file.
-- store_open sets PRAGMA auto_vacuum = INCREMENTAL on a new store before 001
-- runs; a store created earlier keeps auto_vacuum = NONE (its freed pages are
-- reused, the file does not shrink) until an operator runs VACUUM once (see
-- docs/upgrading.md "SQLite stores created before retention").

-- Final tasks by status and age: status IN ('completed', 'failed',
-- 'released') AND updated_at < cutoff.
CREATE INDEX tasks_by_status_updated ON tasks (status, updated_at);

-- Released reservations by the time they ended.
CREATE INDEX reservations_released ON reservations (released_at) WHERE released_at IS NOT NULL;

-- Confirmed events by the time of their confirm.
CREATE INDEX outbox_confirmed ON outbox (confirmed_at) WHERE confirmed_at IS NOT NULL;
