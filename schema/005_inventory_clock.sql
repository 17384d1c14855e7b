-- virtflow SQLite store, schema version 5: the reservation clock.
--
-- A reservation must not expire while nobody can see whether its VM was
-- created: an inventory outage would otherwise hand the same host slot and
-- vmid out twice. So expires_at is compared with the time of the last
-- successful inventory fetch, not with the wall clock: the worker records
-- that time here with each fresh snapshot, and every reader of live
-- reservations (the worker at start, virtflowctl place and nodes) judges
-- expiry against it. While the inventory is stale the time stands still, and
-- so does expiry. Never edit a released migration: add 006_*.sql instead.

CREATE TABLE inventory_clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1),  -- one row
    fresh_at TEXT NOT NULL                        -- last successful inventory fetch (latest of all workers)
);
