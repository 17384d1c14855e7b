-- virtflow SQLite store, schema version 14: groups (task.schedule's `group`,
-- docs/scheduling.md "Groups"), as Nova's server groups.
--
-- A group's members are the tasks whose reservations carry its name: held
-- ones, and those ended because an inventory showed their VM (bound_at set),
-- which count while the deciding worker's snapshot still shows that VM on
-- that host. The engine gets the members per host and filters (affinity,
-- anti-affinity, max_per_host) or scores (the soft policies) by them.
--
-- Several workers may decide members of one group at once: a host
-- generation guards a host's room, not where a group's other members went.
-- server_groups.generation is bumped by every transaction that records a
-- member, conditionally on the value the worker read before it decided
-- (common/store/store_groups.c), so a decision made from a stale view of the group
-- cannot commit: that worker's batch is decided again.
-- Never edit a released migration: add 015_*.sql instead.

ALTER TABLE reservations ADD COLUMN group_name TEXT;   -- NULL: not a group member
CREATE INDEX reservations_by_group ON reservations (group_name) WHERE group_name IS NOT NULL;

CREATE TABLE server_groups (
    name         TEXT PRIMARY KEY,
    policy       TEXT NOT NULL,     -- affinity | anti-affinity | soft-affinity | soft-anti-affinity
    max_per_host INTEGER NOT NULL,  -- members a host may hold; 0: no cap
    generation   INTEGER NOT NULL,  -- one more per transaction that recorded a member
    changed_at   TEXT NOT NULL
);
