-- virtflow PostgreSQL store, schema version 8: the indexes of ../008_console.sql
-- (the console's keyset pagination over tasks, and failed tasks by reason).
-- Never edit a released migration: add 009_*.sql instead, here and in ../.

CREATE INDEX tasks_by_created_id ON tasks (created_at, id);
CREATE INDEX tasks_by_reason ON tasks (reason, created_at) WHERE reason IS NOT NULL;
