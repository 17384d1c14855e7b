-- virtflow SQLite store, schema version 10: lease epochs (fencing tokens).
--
-- A lease holder can be paused (SIGSTOP, a frozen VM, a stalled disk) past
-- its lease's expiry, another worker takes the lease over, and the first one
-- resumes believing it still holds it. Every take-over now moves the lease
-- to the next epoch; a holder records a step only while the lease is still
-- at the epoch the step started under (store_lease_fence), so the paused
-- holder's late record is refused. Renewals by the same owner keep the
-- epoch. Rows of job leases are no longer deleted at a clean stop (only
-- expired), so the epoch never starts again from 1.
-- Never edit a released migration: add 011_*.sql instead.

ALTER TABLE leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;
