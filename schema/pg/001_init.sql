-- virtflow PostgreSQL store, schema version 1: the same tables, columns and
-- meanings as ../001_init.sql (the SQLite store), in PostgreSQL's dialect.
--
-- Applied by virtflow-worker / virtflow-relay at start (common/store/store.c) inside
-- one transaction holding the migration advisory lock, which also sets
-- virtflow_schema.version = 1. Never edit a released migration: add
-- 002_*.sql instead, here and in ../ with the same number.
--
-- Timestamps are RFC 3339 UTC text with milliseconds, always in the form
-- 2026-11-22T01:02:03.123Z (fixed width), so text comparison is time order,
-- exactly as on SQLite (COLLATE "C": byte order, whatever the database's
-- locale). JSON columns are TEXT holding one JSON value, byte for byte.
-- SQLite's INTEGER PRIMARY KEY ids are BIGINT identities.

CREATE TABLE tasks (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('schedule', 'spare')),
    status     TEXT NOT NULL,            -- see docs/contracts.md "Task states"
    reason     TEXT,                     -- invalid | unschedulable | exhausted, when failed
    attempts   INTEGER NOT NULL DEFAULT 0,
    request    TEXT,                     -- JSON: the request body as received
    result     TEXT,                     -- JSON: the result object
    error      TEXT,                     -- human-readable error of the last failure
    node       TEXT COLLATE "C",         -- chosen host name
    vmid       BIGINT,                   -- chosen vmid
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX tasks_by_created ON tasks (created_at);
CREATE INDEX tasks_by_status ON tasks (status, created_at);
CREATE INDEX tasks_by_node ON tasks (node, created_at);

-- History: one row per transition and per attempt.
CREATE TABLE task_events (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    at      TEXT COLLATE "C" NOT NULL,
    status  TEXT NOT NULL,
    detail  TEXT                         -- JSON
);
CREATE INDEX task_events_by_task ON task_events (task_id, id);

-- Capacity and vmids held for a placement until the inventory shows the VM,
-- the task releases it, or it expires. Live = released_at IS NULL AND
-- expires_at > now.
CREATE TABLE reservations (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    node        TEXT COLLATE "C" NOT NULL,
    cpu         DOUBLE PRECISION NOT NULL,   -- vCPUs
    memory      BIGINT NOT NULL,             -- MiB
    disk        BIGINT NOT NULL,             -- GiB
    vmid        BIGINT,
    created_at  TEXT COLLATE "C" NOT NULL,
    expires_at  TEXT COLLATE "C" NOT NULL,
    released_at TEXT COLLATE "C"
);
CREATE INDEX reservations_live ON reservations (expires_at) WHERE released_at IS NULL;
CREATE INDEX reservations_by_task ON reservations (task_id);
CREATE INDEX reservations_by_vmid ON reservations (vmid) WHERE released_at IS NULL;

-- Events written in the same transaction as the state change that causes
-- them; published from here and marked confirmed on the publisher confirm.
-- seq stands in for SQLite's rowid: the order events were written, which is
-- the order they are published in when created_at is equal.
CREATE TABLE outbox (
    id           TEXT COLLATE "C" PRIMARY KEY NOT NULL,  -- event id, AMQP message_id
    routing_key  TEXT NOT NULL,
    body         TEXT NOT NULL,              -- JSON event
    created_at   TEXT COLLATE "C" NOT NULL,
    published_at TEXT COLLATE "C",           -- last publish attempt
    confirmed_at TEXT COLLATE "C",           -- broker confirmed
    attempts     INTEGER NOT NULL DEFAULT 0, -- publish attempts
    seq          BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX outbox_pending ON outbox (created_at) WHERE confirmed_at IS NULL;

-- Webhook deliveries, one row per event and receiver. The body is a copy of
-- the event JSON as the relay received it, so a delivery can be retried or
-- redelivered by an operator without the outbox (which may be pruned) and
-- without the broker.
CREATE TABLE deliveries (
    event_id        TEXT COLLATE "C" NOT NULL,
    receiver        TEXT COLLATE "C" NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivering', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT COLLATE "C",
    last_code       INTEGER,                 -- HTTP status of the last attempt, NULL if none
    last_error      TEXT,
    delivered_at    TEXT COLLATE "C",
    created_at      TEXT COLLATE "C" NOT NULL,
    body            TEXT NOT NULL,           -- JSON event
    PRIMARY KEY (event_id, receiver)
);
CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX deliveries_by_created ON deliveries (created_at);
