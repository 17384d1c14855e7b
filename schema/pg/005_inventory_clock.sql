-- virtflow PostgreSQL store, schema version 5: the reservation clock; the same
-- table as ../005_inventory_clock.sql (reservations expire against the last
-- successful inventory fetch, not the wall clock).
-- Never edit a released migration: add 006_*.sql instead.

CREATE TABLE inventory_clock (
    id       INTEGER PRIMARY KEY CHECK (id = 1),  -- one row
    fresh_at TEXT COLLATE "C" NOT NULL            -- last successful inventory fetch
);
