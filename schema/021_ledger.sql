-- virtflow SQLite store, schema version 21: the ledger's lifetimes, and
-- claims checked by fit.
--
-- Custom resources (a request's `resources`, "gpu": 2) are counted while the
-- VM that holds them exists, not only until it appears: the inventory gives
-- a host's total of them, not what its guests use. A reservation keeps what
-- it held in `resources` (a JSON object, NULL when none; before this version
-- the reader took it from the task's request). When an inventory shows its
-- VM the reservation is bound (schema 9) and its vCPUs, memory, disk and vmid
-- are the host's own figures from then on; its custom resources go on
-- counting until `resources_ended_at`: a later inventory no longer shows the
-- VM on its host, or the task is released. Readers with an older view keep
-- counting them (docs/guarantees.md, "The ledger").
--
-- `vmid_only` marks a reservation that holds its vmid and nothing else: what
-- a preempted placement leaves until its time runs out, so that no other
-- task is given the vmid its client may already be creating.
--
-- A placement is claimed by fit (docs/operations.md, "Running several
-- workers"): the claim counts what the store holds on the host for the
-- claimer's view and inserts the reservation only if the placement still
-- fits. SQLite checks it inside the writer's transaction, under its one
-- write lock, so nothing else is needed here.
-- Never edit a released migration: add 022_*.sql instead.

ALTER TABLE reservations ADD COLUMN resources TEXT;          -- JSON {"gpu": 2}; NULL: none
ALTER TABLE reservations ADD COLUMN resources_ended_at TEXT; -- bound: custom resources no longer counted
ALTER TABLE reservations ADD COLUMN vmid_only INTEGER;       -- 1: holds its vmid alone

-- What the reservations of placed tasks held, from their requests: those
-- still held and those bound to a VM, which count their custom resources
-- from now on (a VM that is gone is seen gone at the next inventory).
UPDATE reservations
   SET resources = (SELECT json_extract(t.request, '$.resources') FROM tasks t
                     WHERE t.id = reservations.task_id AND json_valid(t.request)
                       AND json_type(t.request, '$.resources') = 'object'
                       AND json_extract(t.request, '$.resources') <> '{}')
 WHERE released_at IS NULL OR bound_at IS NOT NULL;

CREATE INDEX reservations_resources_held ON reservations (node)
    WHERE bound_at IS NOT NULL AND resources IS NOT NULL AND resources_ended_at IS NULL;

-- Custom resources that stop counting free room as a release does: the
-- host's generation moves, so other workers take its picture again.
CREATE TRIGGER reservations_bump_on_resources_end AFTER UPDATE OF resources_ended_at ON reservations
WHEN old.resources_ended_at IS NULL AND new.resources_ended_at IS NOT NULL
BEGIN
    INSERT INTO host_generations (node, generation, changed_seq)
    VALUES (new.node, 1, (SELECT coalesce(max(changed_seq), 0) + 1 FROM host_generations))
    ON CONFLICT (node) DO UPDATE SET generation = generation + 1,
                                     changed_seq = excluded.changed_seq;
END;
