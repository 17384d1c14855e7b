-- virtflow PostgreSQL store, schema version 17: tasks found by the name of
-- their VM; see schema/017_task_search.sql. A request that is not JSON (kept
-- as received) has no vm_name: the cast is tried row by row.

ALTER TABLE tasks ADD COLUMN vm_name TEXT COLLATE "C";
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT id, request FROM tasks WHERE request LIKE '%"vm_name"%' LOOP
        BEGIN
            UPDATE tasks SET vm_name = r.request::jsonb ->> 'vm_name'
             WHERE id = r.id AND jsonb_typeof(r.request::jsonb -> 'vm_name') = 'string';
        EXCEPTION WHEN others THEN
            NULL; -- not JSON: no name to find it by
        END;
    END LOOP;
END $$;
CREATE INDEX tasks_by_vm_name ON tasks (vm_name, created_at) WHERE vm_name IS NOT NULL;
