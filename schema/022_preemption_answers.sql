-- virtflow SQLite store, schema version 22: where a task's client waits for
-- its answers.
--
-- A placement may be preempted after its answer went out (docs/scheduling.md
-- "Preemption"): its client, which may be creating the VM, must be told on
-- the channel it asked on, and told again when the task is decided anew.
-- The request republished for that has no reply_to of its own (it comes
-- from the outbox), so the task keeps the one its first message named, and
-- the AMQP correlation_id that went with it. NULL: none was given.
-- Never edit a released migration: add 023_*.sql instead.

ALTER TABLE tasks ADD COLUMN reply_to TEXT;
ALTER TABLE tasks ADD COLUMN correlation_id TEXT;
