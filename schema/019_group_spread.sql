-- virtflow SQLite store, schema version 19: a group's topology spread
-- (task.schedule's `spread` on a request that names a group,
-- docs/scheduling.md "Failure domains and topology spread").
--
-- Every claim of a group (common/store/store_groups.c) records the spread its
-- members were decided under, beside the policy, and a member asking another
-- one is invalid, as one asking another policy is. Across workers the spread
-- holds as the group's hard policies do: a member recorded since a worker
-- read the group moved its generation, so that worker's claim, decided
-- without the member in view (and so perhaps past max_skew), is rejected at
-- commit and its batch decided again.
-- spread_key NULL: the group's members ask no spread.
-- Never edit a released migration: add 021_*.sql instead.

ALTER TABLE server_groups ADD COLUMN spread_key TEXT;
ALTER TABLE server_groups ADD COLUMN spread_max_skew INTEGER;
ALTER TABLE server_groups ADD COLUMN spread_when TEXT;          -- do_not_schedule | score
ALTER TABLE server_groups ADD COLUMN spread_min_domains INTEGER;
