-- virtflow PostgreSQL store, schema version 13: the priority a reservation
-- was placed at; the same meaning as ../013_reservation_priority.sql.
-- Never edit a released migration: add 014_*.sql instead, here and in ../.

ALTER TABLE reservations ADD COLUMN priority INTEGER;
