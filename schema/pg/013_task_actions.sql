-- virtflow PostgreSQL store, schema version 13: operators' actions on a
-- retrying task; see schema/013_task_actions.sql.

ALTER TABLE tasks ADD COLUMN action TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN action_detail TEXT;
