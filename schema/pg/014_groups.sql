-- virtflow PostgreSQL store, schema version 14: groups; the same meaning as
-- ../014_groups.sql.
-- Never edit a released migration: add 015_*.sql instead, here and in ../.

ALTER TABLE reservations ADD COLUMN group_name TEXT COLLATE "C";
CREATE INDEX reservations_by_group ON reservations (group_name) WHERE group_name IS NOT NULL;

CREATE TABLE server_groups (
    name         TEXT COLLATE "C" PRIMARY KEY,
    policy       TEXT COLLATE "C" NOT NULL,
    max_per_host BIGINT NOT NULL,
    generation   BIGINT NOT NULL,
    changed_at   TEXT COLLATE "C" NOT NULL
);
