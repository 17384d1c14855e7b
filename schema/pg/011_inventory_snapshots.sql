-- virtflow PostgreSQL store, schema version 11: inventory snapshots; the same
-- meaning as ../011_inventory_snapshots.sql.
-- Never edit a released migration: add 012_*.sql instead, here and in ../.

CREATE TABLE inventory_snapshots (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    content_hash TEXT COLLATE "C" NOT NULL,
    recorded_at  TEXT COLLATE "C" NOT NULL,
    hosts        TEXT NOT NULL
);
CREATE INDEX inventory_snapshots_by_recorded ON inventory_snapshots (recorded_at);
