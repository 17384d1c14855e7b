-- virtflow PostgreSQL store, schema version 3: several workers on one store;
-- the same tables and meanings as ../003_shared_store.sql.
--
-- Every host has a generation that each transaction changing its
-- reservations bumps: store_host_claim moves it from the generation the
-- worker decided from to the next (locking the row until the commit: SELECT
-- ... FOR UPDATE NOWAIT, then a conditional UPDATE), and a release bumps it
-- through the PL/pgSQL trigger below, like SQLite's.
--
-- changed_seq comes from a sequence here (SQLite: one number per transaction
-- under its write lock). Numbers are taken in one order and committed in
-- another, so a reader may skip a change whose number is below one it has
-- already seen; that costs no correctness: the skipped host's generation is
-- then stale in the reader's view, and its next claim on that host conflicts
-- and reloads it.
-- Never edit a released migration: add 004_*.sql instead.

CREATE TABLE host_generations (
    node        TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    generation  BIGINT NOT NULL,         -- changes to this host's reservations
    changed_seq BIGINT NOT NULL          -- store-wide order of the last change
);
CREATE INDEX host_generations_changed ON host_generations (changed_seq);
CREATE SEQUENCE host_generations_seq;

CREATE FUNCTION reservations_bump_host() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (OLD.released_at IS NULL AND NEW.released_at IS NOT NULL) THEN
        RETURN NULL;
    END IF;
    INSERT INTO host_generations AS h (node, generation, changed_seq)
    VALUES (NEW.node, 1, nextval('host_generations_seq'))
    ON CONFLICT (node) DO UPDATE SET generation = h.generation + 1,
                                     changed_seq = excluded.changed_seq;
    RETURN NULL;
END;
$$;

CREATE TRIGGER reservations_bump_on_release AFTER UPDATE OF released_at ON reservations
    FOR EACH ROW EXECUTE FUNCTION reservations_bump_host();

-- A vmid is held by at most one unreleased reservation, whatever any worker
-- believes. Stores written by several workers before this version may hold a
-- vmid twice: the oldest holder keeps it, the others are released now.
UPDATE reservations
   SET released_at = to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
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
    name        TEXT COLLATE "C" PRIMARY KEY NOT NULL,   -- the job: "spares", "outbox", ...
    owner       TEXT NOT NULL,                           -- worker instance id (host:pid:random)
    acquired_at TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL
);
