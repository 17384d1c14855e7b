-- virtflow SQLite store, schema version 3: several workers on one store.
--
-- Every worker decides over reservations it holds in memory. With several
-- workers writing the same store, a worker must learn what the others
-- reserved before it decides, and a decision made from a stale view must not
-- commit (docs/contracts.md "Store"; docs/operations.md "Running several workers"). As in
-- OpenStack Placement, every host has a generation that each transaction
-- changing its reservations bumps. A worker claims a host before it records
-- reservations on it (store_host_claim): the claim moves the host from the
-- generation the worker decided from to the next one, and fails if another
-- writer moved it first. A release bumps it through the trigger below, so no
-- writer (worker, spare driver, virtflowctl, an operator's sqlite3) frees
-- capacity unseen. changed_seq is a store-wide counter: a worker reads the
-- hosts changed since it last looked, not all of them.
-- Never edit a released migration: add 004_*.sql instead.

CREATE TABLE host_generations (
    node        TEXT PRIMARY KEY NOT NULL,
    generation  INTEGER NOT NULL,        -- changes to this host's reservations
    changed_seq INTEGER NOT NULL         -- store-wide order of the last change
) WITHOUT ROWID;                         -- one b-tree for the row: claimed at every placement
CREATE INDEX host_generations_changed ON host_generations (changed_seq);

CREATE TRIGGER reservations_bump_on_release AFTER UPDATE OF released_at ON reservations
WHEN old.released_at IS NULL AND new.released_at IS NOT NULL
BEGIN
    INSERT INTO host_generations (node, generation, changed_seq)
    VALUES (new.node, 1, (SELECT coalesce(max(changed_seq), 0) + 1 FROM host_generations))
    ON CONFLICT (node) DO UPDATE SET generation = generation + 1,
                                     changed_seq = excluded.changed_seq;
END;

-- A vmid is held by at most one unreleased reservation, whatever any worker
-- believes. Stores written by several workers before this version may hold a
-- vmid twice: the oldest holder keeps it, the others are released now.
UPDATE reservations
   SET released_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
 WHERE released_at IS NULL AND vmid IS NOT NULL
   AND id NOT IN (SELECT min(id) FROM reservations
                   WHERE released_at IS NULL AND vmid IS NOT NULL GROUP BY vmid);
DROP INDEX reservations_by_vmid;
CREATE UNIQUE INDEX reservations_by_vmid ON reservations (vmid)
    WHERE released_at IS NULL AND vmid IS NOT NULL;
CREATE INDEX reservations_live_by_node ON reservations (node) WHERE released_at IS NULL;

-- Work that outlives a message (the spare driver, the outbox sweep,
-- reservation expiry) is driven by one worker at a time: the one holding its
-- lease. A lease not renewed by expires_at may be taken by another worker.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY NOT NULL,   -- the job: "spares", "outbox", ...
    owner       TEXT NOT NULL,               -- worker instance id (host:pid:random)
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
