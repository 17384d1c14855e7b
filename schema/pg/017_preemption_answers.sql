-- virtflow PostgreSQL store, schema version 17: where a task's client waits
-- for its answers; see ../017_preemption_answers.sql.
-- Never edit a released migration: add 018_*.sql instead, here and in ../.

ALTER TABLE tasks ADD COLUMN reply_to TEXT;
ALTER TABLE tasks ADD COLUMN correlation_id TEXT;
