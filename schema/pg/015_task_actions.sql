-- virtflow PostgreSQL store, schema version 15: operators' actions on a
-- retrying task; see schema/015_task_actions.sql.

ALTER TABLE tasks ADD COLUMN action TEXT COLLATE "C";
ALTER TABLE tasks ADD COLUMN action_detail TEXT;
