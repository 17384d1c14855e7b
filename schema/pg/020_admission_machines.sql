-- virtflow PostgreSQL store, schema version 20: which task places each CAPPX
-- ProxmoxMachine (../020_admission_machines.sql says what it is for).
-- Never edit a released migration: add 021_*.sql instead, here and in ../.

CREATE TABLE admission_machines (
    machine    TEXT COLLATE "C" PRIMARY KEY,
    task_id    TEXT COLLATE "C" NOT NULL,
    owner      TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
