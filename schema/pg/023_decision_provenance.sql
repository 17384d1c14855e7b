-- virtflow PostgreSQL store, schema version 23: what each decision was made
-- over; see schema/023_decision_provenance.sql.
-- Never edit a released migration: add 024_*.sql instead, here and in ../.

ALTER TABLE tasks ADD COLUMN decided_snapshot BIGINT;
ALTER TABLE tasks ADD COLUMN decided_holds BIGINT;
ALTER TABLE tasks ADD COLUMN decided_config BIGINT;
ALTER TABLE tasks ADD COLUMN decided_clock_ms BIGINT;
ALTER TABLE tasks ADD COLUMN decided_ms BIGINT;

CREATE TABLE engine_configs (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    digest      TEXT COLLATE "C" NOT NULL UNIQUE,
    recorded_at TEXT COLLATE "C" NOT NULL,
    body        TEXT NOT NULL
);

CREATE INDEX inventory_snapshots_by_hash ON inventory_snapshots (content_hash);
