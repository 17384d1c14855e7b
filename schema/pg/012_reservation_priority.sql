-- virtflow PostgreSQL store, schema version 12: the priority a reservation
-- was placed at; the same meaning as ../012_reservation_priority.sql.
-- Never edit a released migration: add 013_*.sql instead, here and in ../.

ALTER TABLE reservations ADD COLUMN priority INTEGER;
