-- virtflow SQLite store, schema version 11: inventory snapshots.
--
-- What-if replay (`virtflowctl simulate`, issue 25) decides the recorded
-- requests again against the inventory as it was at each decision. The
-- worker records the hosts it fetched here, but only when their content
-- changed since the newest row (content_hash differs), so a steady inventory
-- costs one row, not one per refresh. hosts is the fetched hostset as a JSON
-- document in the shape inventory sources deliver (a `nodes` array of hosts
-- as worker/inventory/host_json.h reads them, and `vmids`), so a replay loads
-- it with the same code as the file source.
--
-- Retention (store.retention, common/store/store_prune.c) deletes snapshots older
-- than the cutoff except the newest of them: that one was still in force at
-- the cutoff, so the decisions kept after it can still be replayed.
-- Never edit a released migration: add 012_*.sql instead.

CREATE TABLE inventory_snapshots (
    id           INTEGER PRIMARY KEY,
    content_hash TEXT NOT NULL,          -- hex SHA-256 of the hosts' content
    recorded_at  TEXT NOT NULL,          -- when the worker fetched it (store time format)
    hosts        TEXT NOT NULL           -- JSON: {"nodes": [...], "vmids": [...]}
);
-- The newest row (the hash to compare with), the rows in force since a time,
-- and retention's cutoff.
CREATE INDEX inventory_snapshots_by_recorded ON inventory_snapshots (recorded_at);
