-- virtflow PostgreSQL store, schema version 4: due deliveries found per
-- receiver; the same indexes as ../004_deliveries_by_receiver.sql (a stuck
-- receiver's backlog does not slow the scans for the others).
-- Never edit a released migration: add 005_*.sql instead.

CREATE INDEX deliveries_due_by_receiver ON deliveries (receiver, status, next_attempt_at);
DROP INDEX deliveries_due;
CREATE INDEX deliveries_delivering ON deliveries (receiver) WHERE status = 'delivering';
