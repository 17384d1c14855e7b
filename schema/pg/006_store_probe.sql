-- virtflow PostgreSQL store, schema version 6: the worker's write probe; the
-- same table as ../006_store_probe.sql (consuming resumes once a write
-- commits again).
-- Never edit a released migration: add 007_*.sql instead.

CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),  -- one row
    at TEXT COLLATE "C" NOT NULL            -- the last probe that committed
);
