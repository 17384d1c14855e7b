-- virtflow SQLite store, schema version 9: reservations ended by evidence.
--
-- A worker ends a reservation when its inventory snapshot shows the VM on
-- its host: from then on the host's own figures count the VM. But workers
-- refresh on their own clocks, and one whose refreshes fail keeps an older
-- snapshot: for that worker the VM is not there yet, and a reservation that
-- simply disappeared would hand the host's capacity and the vmid out a
-- second time. So such an end is stamped with the time of the inventory
-- fetch that showed the VM (bound_at), and every reader keeps counting the
-- reservation while the snapshot it decides from does not show the VM and
-- is older than that fetch, or the reservation has not expired yet
-- (docs/guarantees.md, "Workers whose inventories differ"). Ends for other
-- reasons (the task failed, a spare was released, expiry) leave bound_at
-- NULL: nothing will ever appear, so nothing stays counted.
-- Never edit a released migration: add 010_*.sql instead.

ALTER TABLE reservations ADD COLUMN bound_at TEXT;  -- fetch time of the inventory that showed the VM
CREATE INDEX reservations_bound ON reservations (bound_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_expiry ON reservations (expires_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_by_node ON reservations (node, bound_at) WHERE bound_at IS NOT NULL;
CREATE INDEX reservations_bound_by_node_expiry ON reservations (node, expires_at)
    WHERE bound_at IS NOT NULL;
