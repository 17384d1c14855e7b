-- virtflow PostgreSQL store, schema version 13: the messages parked in virtflow.dead, as
-- the programs that park them record them (the worker in the transaction that
-- decides to park, the relay when it parks or rejects an event), and when
-- virtflowctl dead redrive moved one back. GET /v1/dead-letters reads this
-- table and never the queue, whose reads would disturb it (docs/api.md).
-- Never edit a released migration: add 014_*.sql instead, here and in ../.

CREATE TABLE dead_letters (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    routing_key TEXT NOT NULL,           -- the original routing key
    message_key TEXT NOT NULL,           -- message_id, else "sha256:" and the body's digest
    message_id  TEXT,
    task_id     TEXT,                    -- the task the message names, when any
    reason      TEXT NOT NULL,           -- x-virtflow-error, or why the broker parks it
    parked_by   TEXT NOT NULL,           -- 'worker' or 'relay'
    parked_at   TEXT NOT NULL,           -- the last time it was parked
    body_bytes  BIGINT NOT NULL,
    body_excerpt TEXT NOT NULL,          -- its first bytes, printable (virtflowctl dead list's)
    redriven_at TEXT,                    -- NULL while parked
    UNIQUE (routing_key, message_key)
);
CREATE INDEX dead_letters_by_parked ON dead_letters (parked_at, id);

-- GET /v1/deliveries?type= (and the console's filter by type) reads the type
-- from the stored event: without an index on that expression, a type that is
-- rare among the newest deliveries made it read the whole table (100,000
-- rows: 0.37 s on the API's one HTTP thread). The expression is the one
-- store_deliveries.c filters on, so the planner can use the index.
CREATE INDEX deliveries_by_type ON deliveries ((body::json ->> 'type'), created_at);
