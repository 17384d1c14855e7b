-- virtflow SQLite store, schema version 12: the priority a reservation was
-- placed at.
--
-- A request that fits nowhere may take the room of reservations placed at a
-- lower priority whose VM has not appeared yet (docs/scheduling.md,
-- "Preemption"), and the worker deciding it may not be the one that placed
-- them: every worker on the store must know what each reservation's
-- placement was worth. NULL (a spare's reservation, or one recorded before
-- this version) is never preempted.
-- Never edit a released migration: add 013_*.sql instead.

ALTER TABLE reservations ADD COLUMN priority INTEGER;  -- the placement's priority; NULL: never preempted
