-- virtflow PostgreSQL store, schema version 19: a group's topology spread
-- (../019_group_spread.sql says what it is for).
-- Never edit a released migration: add 021_*.sql instead, here and in ../.

ALTER TABLE server_groups ADD COLUMN spread_key TEXT COLLATE "C";
ALTER TABLE server_groups ADD COLUMN spread_max_skew BIGINT;
ALTER TABLE server_groups ADD COLUMN spread_when TEXT COLLATE "C";
ALTER TABLE server_groups ADD COLUMN spread_min_domains BIGINT;
