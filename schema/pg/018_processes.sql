-- virtflow PostgreSQL store, schema version 18: the programs that work on
-- this store; see schema/018_processes.sql.

CREATE TABLE processes (
    owner      TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    program    TEXT COLLATE "C" NOT NULL,
    host       TEXT NOT NULL,
    pid        BIGINT NOT NULL,
    version    TEXT NOT NULL,
    started_at TEXT COLLATE "C" NOT NULL,
    beat_at    TEXT COLLATE "C" NOT NULL,
    in_hand    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX processes_by_beat ON processes (beat_at);
