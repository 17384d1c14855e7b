-- virtflow PostgreSQL store, schema version 10: lease epochs (fencing
-- tokens); the same meaning as ../010_lease_epochs.sql. The fence is a
-- conditional UPDATE of the lease row inside the recording transaction: it
-- holds the row lock until the commit, so a take-over cannot commit between
-- the check and the record.
-- Never edit a released migration: add 011_*.sql instead, here and in ../.

ALTER TABLE leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 1;
