-- virtflow SQLite store, schema version 16: the relay's receivers operated
-- as Svix's endpoints are: a circuit breaker per receiver and bulk redelivery.
-- Never edit a released migration: add 017_*.sql instead, here and in pg/.

-- receiver_states: each receiver's circuit breaker as the relay holding the
-- "deliveries" lease last recorded it, so a restarted relay (or the one that
-- takes the lease over) goes on disabled, or counting from the first
-- failure, instead of trying a dead receiver at full pace again; also what
-- the API and virtflowctl show. One row per receiver name, written only when
-- its state changes (docs/webhooks.md "Pace and circuit breaker").
CREATE TABLE receiver_states (
    receiver      TEXT PRIMARY KEY,
    state         TEXT NOT NULL CHECK (state IN ('enabled', 'disabled')),
    failing_since TEXT,                  -- the first failure since the last success; NULL: none
    disabled_at   TEXT,                  -- while disabled
    last_error    TEXT,
    updated_at    TEXT NOT NULL
);

-- redeliveries: one operator's bulk redelivery (virtflowctl deliveries
-- redeliver, POST /v1/deliveries/redeliver): what it matched, at what pace.
-- The deliveries it reset name it (deliveries.redelivery_id), so its
-- progress is a count of those rows by status, and the same request again
-- (its id) resets nothing twice.
CREATE TABLE redeliveries (
    id            TEXT PRIMARY KEY,      -- rdl_...
    receiver      TEXT NOT NULL,
    since         TEXT NOT NULL,         -- deliveries created at or after this
    status_filter TEXT NOT NULL CHECK (status_filter IN ('failed', 'exhausted')),
    rate_per_s    REAL,                  -- NULL: the receiver's pace
    requested_by  TEXT,                  -- virtflowctl, or the API key's name
    request       TEXT NOT NULL,         -- the filters as JSON: the same id means the same request
    matched       INTEGER NOT NULL,      -- deliveries reset
    created_at    TEXT NOT NULL
);

ALTER TABLE deliveries ADD COLUMN redelivery_id TEXT;
CREATE INDEX deliveries_by_redelivery ON deliveries (redelivery_id) WHERE redelivery_id IS NOT NULL;
