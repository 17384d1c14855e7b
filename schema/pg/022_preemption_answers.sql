-- virtflow PostgreSQL store, schema version 22: where a task's client waits
-- for its answers; see ../022_preemption_answers.sql.
-- Never edit a released migration: add 023_*.sql instead, here and in ../.

ALTER TABLE tasks ADD COLUMN reply_to TEXT;
ALTER TABLE tasks ADD COLUMN correlation_id TEXT;
