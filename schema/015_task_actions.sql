-- virtflow SQLite store, schema version 15: operators' actions on a
-- retrying task (virtflowctl task cancel | retry-now, the console's buttons).
--
-- A retrying task is a message waiting in a delay tier; the operator's tool
-- cannot take it out of the broker, so it leaves a mark here and the worker
-- acts on it when a copy of the task comes back:
--   cancel     the next copy ends the task `cancelled` (task.cancelled)
--   retry_now  one more copy was published at once: the first copy to come
--              back is decided, and the mark turns into drop_copy
--   drop_copy  the one surplus copy still out: the next copy is dropped
-- action_detail is JSON text ({"by": ..., "reason": ...}) for the history
-- and the task.cancelled event. NULL action: nothing asked.
-- Never edit a released migration: add 016_*.sql instead.

ALTER TABLE tasks ADD COLUMN action TEXT;
ALTER TABLE tasks ADD COLUMN action_detail TEXT;
