-- virtflow PostgreSQL store, schema version 21: the ledger's lifetimes and
-- claims checked by fit; the same columns and meanings as ../021_ledger.sql,
-- and the claim itself, which runs here in the server.
--
-- A claim (virtflow_claim below) is one statement in a transaction of its
-- own: it takes a transaction-level advisory lock per host (in one order, so
-- two claims never wait on each other in a circle), counts what the store
-- holds on each host for the claimer's view, and inserts the reservations
-- that still fit, leaving out those that do not and those whose vmid is
-- held; it answers for each. The locks end with the statement's own commit:
-- nothing a worker does afterwards, or a pause of the worker, holds them.
-- Each statement of the function sees what committed before it ran, so the
-- count that follows the locks sees every claim that held them before.
--
-- The reservation's task row is written by the worker's own transaction,
-- which commits after its claims: the foreign key from reservations to tasks
-- is dropped (a claim whose transaction never commits is a reservation
-- without a task, which expires like any reservation whose VM never came).
-- Never edit a released migration: add 022_*.sql instead, here and in ../.

ALTER TABLE reservations DROP CONSTRAINT IF EXISTS reservations_task_id_fkey;
ALTER TABLE reservations ADD COLUMN resources TEXT;
ALTER TABLE reservations ADD COLUMN resources_ended_at TEXT COLLATE "C";
ALTER TABLE reservations ADD COLUMN vmid_only INTEGER;

UPDATE reservations r
   SET resources = (t.request::json -> 'resources')::text
  FROM tasks t
 WHERE t.id = r.task_id AND (r.released_at IS NULL OR r.bound_at IS NOT NULL)
   AND t.status = 'completed' AND t.request LIKE '%"resources"%'
   AND json_typeof(t.request::json -> 'resources') = 'object'
   AND (t.request::json -> 'resources')::text NOT IN ('{}', '{ }');

CREATE INDEX reservations_resources_held ON reservations (node)
    WHERE bound_at IS NOT NULL AND resources IS NOT NULL AND resources_ended_at IS NULL;

-- A claim frees the vmid of a reservation that has expired (the sweep may
-- not have marked it yet) without moving its host's generation: nobody
-- counts an expired reservation, and the generation's row may be locked by
-- a transaction that is not the claim's to wait for. Custom resources that
-- stop counting (resources_ended_at) free room as a release does.
CREATE OR REPLACE FUNCTION reservations_bump_host() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ((OLD.released_at IS NULL AND NEW.released_at IS NOT NULL)
            OR (OLD.resources_ended_at IS NULL AND NEW.resources_ended_at IS NOT NULL))
       OR current_setting('virtflow.claiming', true) = 'on' THEN
        RETURN NULL;
    END IF;
    INSERT INTO host_generations AS h (node, generation, changed_seq)
    VALUES (NEW.node, 1, nextval('host_generations_seq'))
    ON CONFLICT (node) DO UPDATE SET generation = h.generation + 1,
                                     changed_seq = excluded.changed_seq;
    RETURN NULL;
END;
$$;

CREATE TRIGGER reservations_bump_on_resources_end AFTER UPDATE OF resources_ended_at
    ON reservations FOR EACH ROW EXECUTE FUNCTION reservations_bump_host();

-- The placements, one element of each array apiece, in claim order (a
-- limit is what the claimer's inventory leaves on the host for reservations:
-- capacity less what its guests have; NULL: not checked, that filter is
-- off; lim_res a JSON object of custom resources by their names in lower
-- case, names being compared without regard to case); resources a JSON
-- object, NULL when none. The hosts they are on: host_shown, a JSON array of
-- the vmids of bound reservations on the host whose VMs the claimer's
-- inventory shows (its figures count them) or NULL; host_res_inv, whether
-- that inventory counts the guests' custom resources itself
-- (allocated_resources). clock: the claimer's reservation clock; view_at:
-- when its inventory was fetched; wall: now, for freeing the vmids of
-- expired reservations. Verdicts (seq counts from 0): 0 recorded
-- (reservation_id), 1 no room left, 2 vmid held. Placements on one host are
-- counted in seq order: each must fit with the store's and every earlier
-- one's. Arrays, not one JSON document: the server reads them as it reads
-- any parameter, where parsing JSON was a good part of a claim's cost.
CREATE FUNCTION virtflow_claim(tasks text[], nodes text[], cpus float8[], memories bigint[],
                               disks bigint[], vmids bigint[], resources text[],
                               priorities integer[], created text[], expires text[],
                               groups text[], vmid_only boolean[], lim_cpu float8[],
                               lim_memory float8[], lim_disk bigint[], lim_slots bigint[],
                               lim_res text[], host_nodes text[], host_shown text[],
                               host_res_inv boolean[], clock text, view_at text, wall text)
RETURNS TABLE (seq integer, verdict integer, reservation_id bigint, lock_wait_ms double precision)
LANGUAGE plpgsql VOLATILE
-- Planned at every call: a plan kept from a small table would scan a big one.
SET plan_cache_mode = force_custom_plan
-- Another claim holds a host's lock for its one statement; only a claim sent
-- with a transaction's commit that never came (its worker paused between
-- the two) could hold one longer: this one then gives up, not waits.
SET lock_timeout = '5s'
AS $fn$
#variable_conflict use_column
DECLARE
    started timestamptz := clock_timestamp();
    waited double precision;
BEGIN
    PERFORM pg_advisory_xact_lock(1986415683, k)
       FROM (SELECT DISTINCT hashtext(n) AS k FROM unnest(host_nodes) n ORDER BY 1) keys;
    waited := extract(epoch FROM clock_timestamp() - started) * 1000;
    PERFORM set_config('virtflow.claiming', 'on', true);
    UPDATE reservations r SET released_at = wall
     WHERE r.vmid = ANY (vmids) AND r.released_at IS NULL AND r.expires_at <= wall;
    PERFORM set_config('virtflow.claiming', 'off', true);
    RETURN QUERY
    WITH p AS (
        SELECT (t.o - 1)::integer AS seq, t.task, t.node, t.cpu, t.memory, t.disk, t.vmid,
               t.resources::json AS resources, t.priority, t.created, t.expires, t.grp,
               coalesce(t.vmid_only, false) AS vmid_only, t.lim_cpu, t.lim_memory, t.lim_disk,
               t.lim_slots, t.lim_res::json AS lim_res
          FROM unnest(tasks, nodes, cpus, memories, disks, vmids, resources, priorities, created,
                      expires, groups, vmid_only, lim_cpu, lim_memory, lim_disk, lim_slots,
                      lim_res)
               WITH ORDINALITY AS t(task, node, cpu, memory, disk, vmid, resources, priority,
                                    created, expires, grp, vmid_only, lim_cpu, lim_memory,
                                    lim_disk, lim_slots, lim_res, o)),
    h AS (
        SELECT x.node, coalesce(x.res_inv, false) AS res_inv,
               ARRAY(SELECT json_array_elements_text(coalesce(x.shown, '[]')::json)::bigint)
                   AS shown
          FROM unnest(host_nodes, host_shown, host_res_inv) AS x(node, shown, res_inv)),
    -- What the store holds on those hosts that this view counts: held;
    -- bound by a view newer than this one, or not expired; and bound with
    -- custom resources not ended. Each part is one index range.
    rows AS (
        SELECT r.node, r.cpu, r.memory, r.disk, r.vmid, r.vmid_only, r.resources,
               r.bound_at IS NOT NULL AS bound, r.resources_ended_at IS NULL AS res_live, true AS held
          FROM reservations r
         WHERE r.node IN (SELECT node FROM h) AND r.released_at IS NULL AND r.expires_at > clock
        UNION ALL
        SELECT r.node, r.cpu, r.memory, r.disk, r.vmid, r.vmid_only, r.resources, true,
               r.resources_ended_at IS NULL, true
          FROM reservations r
         WHERE r.node IN (SELECT node FROM h) AND r.bound_at IS NOT NULL AND r.bound_at > view_at
        UNION ALL
        SELECT r.node, r.cpu, r.memory, r.disk, r.vmid, r.vmid_only, r.resources, true,
               r.resources_ended_at IS NULL, true
          FROM reservations r
         WHERE r.node IN (SELECT node FROM h) AND r.bound_at IS NOT NULL
           AND r.bound_at <= view_at AND r.expires_at > clock
        UNION ALL
        SELECT r.node, 0, 0, 0, r.vmid, r.vmid_only, r.resources, true, true, false
          FROM reservations r
         WHERE r.node IN (SELECT node FROM h) AND r.bound_at IS NOT NULL
           AND r.resources IS NOT NULL AND r.resources_ended_at IS NULL
           AND r.bound_at <= view_at AND r.expires_at <= clock),
    counted AS (
        SELECT r.*, h.res_inv,
               r.held AND NOT (r.bound AND r.vmid = ANY (h.shown)) AS cap
          FROM rows r JOIN h ON h.node = r.node),
    used AS (
        SELECT node, sum(cpu) AS cpu, sum(memory) AS memory, sum(disk) AS disk,
               count(*) FILTER (WHERE coalesce(vmid_only, 0) = 0) AS slots
          FROM counted WHERE cap GROUP BY node),
    used_res AS (
        SELECT c.node, lower(e.key) AS name, sum(e.value::bigint) AS amount
          FROM counted c, json_each_text(c.resources::json) e
         WHERE c.resources IS NOT NULL AND c.res_live
           AND (c.cap OR (c.bound AND NOT c.res_inv))
         GROUP BY 1, 2),
    cum AS (
        SELECT p.*, sum(p.cpu) OVER w AS c_cpu, sum(p.memory) OVER w AS c_memory,
               sum(p.disk) OVER w AS c_disk,
               count(*) FILTER (WHERE NOT p.vmid_only) OVER w AS c_slots
          FROM p WINDOW w AS (PARTITION BY p.node ORDER BY p.seq)),
    p_res AS (
        SELECT p.seq, p.node, lower(e.key) AS name, p.lim_res ->> lower(e.key) AS lim,
               sum(e.value::bigint) OVER (PARTITION BY p.node, lower(e.key) ORDER BY p.seq)
                   AS c_amount
          FROM p, json_each_text(p.resources) e
         WHERE p.resources IS NOT NULL),
    res_fit AS (
        SELECT pr.seq,
               bool_and(pr.lim IS NULL OR coalesce(u.amount, 0) + pr.c_amount <= pr.lim::bigint)
                   AS fits
          FROM p_res pr LEFT JOIN used_res u ON u.node = pr.node AND u.name = pr.name
         GROUP BY pr.seq),
    fit AS (
        SELECT c.*,
               (c.lim_cpu IS NULL OR coalesce(u.cpu, 0) + c.c_cpu <= c.lim_cpu + 1e-6)
               AND (c.lim_memory IS NULL OR coalesce(u.memory, 0) + c.c_memory <= c.lim_memory + 1e-6)
               AND (c.lim_disk IS NULL OR coalesce(u.disk, 0) + c.c_disk <= c.lim_disk)
               AND (c.lim_slots IS NULL OR c.vmid_only OR coalesce(u.slots, 0) + c.c_slots <= c.lim_slots)
               AND coalesce(rf.fits, true) AS fits
          FROM cum c LEFT JOIN used u ON u.node = c.node LEFT JOIN res_fit rf ON rf.seq = c.seq),
    ins AS (
        INSERT INTO reservations (task_id, node, cpu, memory, disk, vmid, created_at, expires_at,
                                  priority, resources, group_name, vmid_only)
        SELECT f.task, f.node, f.cpu, f.memory, f.disk, f.vmid, f.created, f.expires, f.priority,
               f.resources::text, f.grp, CASE WHEN f.vmid_only THEN 1 END
          FROM fit f WHERE f.fits
        ON CONFLICT (vmid) WHERE released_at IS NULL AND vmid IS NOT NULL DO NOTHING
        RETURNING id, task_id, node, vmid)
    SELECT f.seq, CASE WHEN NOT f.fits THEN 1 WHEN i.id IS NULL THEN 2 ELSE 0 END, i.id, waited
      FROM fit f LEFT JOIN ins i
        ON i.task_id = f.task AND i.node = f.node AND i.vmid IS NOT DISTINCT FROM f.vmid
     ORDER BY f.seq;
END;
$fn$;
