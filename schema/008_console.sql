-- virtflow SQLite store, schema version 8: indexes for the console
-- (`virtflowctl serve`).
--
-- The console pages through tasks newest first with a keyset cursor,
-- (created_at, id) < (?, ?), so a page costs the same on the first screen and
-- on the thousandth whatever the size of the table; (created_at, id) makes
-- that one index range. Failed tasks are filtered by reason, which no index
-- covered (a scan of every task to find the few unschedulable ones).
-- Never edit a released migration: add 009_*.sql instead.

CREATE INDEX tasks_by_created_id ON tasks (created_at, id);
CREATE INDEX tasks_by_reason ON tasks (reason, created_at) WHERE reason IS NOT NULL;
