-- virtflow SQLite store, schema version 17: tasks found by the name of their
-- VM (virtflowctl tasks --vm-name, the console's search): users know their
-- VM's name, not the task id. The request's vm_name, copied into a column
-- of its own when the task is recorded (store_task_insert), so that the
-- search is an index range rather than a parse of every request.
-- Never edit a released migration: add a later one instead.

ALTER TABLE tasks ADD COLUMN vm_name TEXT;
UPDATE tasks
   SET vm_name = CASE WHEN json_valid(request) THEN
                     CASE WHEN json_type(request, '$.vm_name') = 'text'
                          THEN json_extract(request, '$.vm_name') END END
 WHERE request LIKE '%"vm_name"%';
CREATE INDEX tasks_by_vm_name ON tasks (vm_name, created_at) WHERE vm_name IS NOT NULL;
