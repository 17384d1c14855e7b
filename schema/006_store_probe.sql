-- virtflow SQLite store, schema version 6: the worker's write probe.
--
-- When a commit fails (the file locked by another process, the disk full,
-- read-only), the worker hands the messages in hand back to the broker once,
-- stops consuming, and tries a small write here, with backoff, until one
-- commits; only then does it consume again. Cycling the broker connection
-- instead would count a delivery against every message in the prefetch
-- window each time, and quorum queues dead-letter a message past their
-- delivery-limit. Never edit a released migration: add 007_*.sql instead.

CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),  -- one row
    at TEXT NOT NULL                        -- the last probe that committed
);
