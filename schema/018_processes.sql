-- virtflow SQLite store, schema version 18: the programs that work on this
-- store, each as it last said (virtflowctl workers, the console's Workers
-- page), as Flower's workers tab or Sidekiq's processes show theirs. Every
-- worker and relay writes its row at start and again every 5 s (the lease
-- renewal's pace: LEASE_RENEW_S), deletes it at a clean stop; a row not
-- written for LEASE_TTL_S (15 s) is a process that died or cannot reach the
-- store. The leases each holds are in leases (owner).
-- Never edit a released migration: add a later one instead.

CREATE TABLE processes (
    owner      TEXT PRIMARY KEY NOT NULL, -- store_owner_name: host@pidns.boot:pid:random
    program    TEXT NOT NULL,             -- virtflow-worker | virtflow-relay
    host       TEXT NOT NULL,             -- its host name
    pid        INTEGER NOT NULL,
    version    TEXT NOT NULL,             -- project version and commit
    started_at TEXT NOT NULL,
    beat_at    TEXT NOT NULL,             -- its last heartbeat
    in_hand    INTEGER NOT NULL DEFAULT 0 -- messages received, not yet acked (worker);
                                          -- deliveries being sent (relay)
);
CREATE INDEX processes_by_beat ON processes (beat_at);
