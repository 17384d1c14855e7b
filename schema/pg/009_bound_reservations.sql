-- virtflow PostgreSQL store, schema version 9: the column and indexes of
-- ../009_bound_reservations.sql (a reservation ended because an inventory
-- showed its VM keeps counting for readers whose snapshot is older).
-- Never edit a released migration: add 010_*.sql instead, here and in ../.

ALTER TABLE reservations ADD COLUMN bound_at TEXT COLLATE "C";
CREATE INDEX reservations_bound ON reservations (bound_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_expiry ON reservations (expires_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_by_node ON reservations (node, bound_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_by_node_expiry ON reservations (node, expires_at)
    WHERE bound_at IS NOT NULL;
