-- virtflow PostgreSQL store, schema version 7: indexes for retention; the same
-- as ../007_retention.sql (a prune batch costs what it deletes). Freed space
-- is the server's autovacuum's to reuse.
-- Never edit a released migration: add 008_*.sql instead.

CREATE INDEX tasks_by_status_updated ON tasks (status, updated_at);
CREATE INDEX reservations_released ON reservations (released_at) WHERE released_at IS NOT NULL;
CREATE INDEX outbox_confirmed ON outbox (confirmed_at) WHERE confirmed_at IS NOT NULL;
