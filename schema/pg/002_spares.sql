-- virtflow PostgreSQL store, schema version 2: spare nodes for cluster
-- upgrades; the same table as ../002_spares.sql.
--
-- One row per spare VM of a spare.prepare task. The worker records the rows,
-- with the placement and the reservations, in the transaction that accepts
-- the request; its spare driver then works through them (provision, wait for
-- Kubernetes Ready, deprovision) one step at a time, recording each step, so
-- a restarted worker resumes where the last one stopped. Never edit a
-- released migration: add 003_*.sql instead.

CREATE TABLE spares (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id         TEXT COLLATE "C" NOT NULL REFERENCES tasks (id), -- the spare.prepare task
    upgrade_id      TEXT COLLATE "C" NOT NULL,
    cluster         TEXT,
    spare_index     INTEGER NOT NULL,                      -- 1..count
    name            TEXT NOT NULL,                         -- VM and Kubernetes node name
    node            TEXT NOT NULL,                         -- host
    ip              TEXT NOT NULL DEFAULT '',              -- the host's address
    vmid            BIGINT NOT NULL,
    cpu             DOUBLE PRECISION NOT NULL,             -- vCPUs
    memory          BIGINT NOT NULL,                       -- MiB
    disk            BIGINT NOT NULL,                       -- GiB
    state           TEXT NOT NULL CHECK (state IN ('provisioning', 'waiting_ready', 'ready',
                                                   'failed', 'releasing', 'released')),
    attempts        INTEGER NOT NULL DEFAULT 0,            -- provisioner attempts of this step
    next_at         TEXT COLLATE "C",                      -- driver's next step due; NULL: none
    ready_by        TEXT COLLATE "C",                      -- Ready deadline (waiting_ready)
    ready_timeout_s INTEGER NOT NULL,
    release_task_id TEXT COLLATE "C",                      -- the spare.release task, if any
    pipeline_id     BIGINT,                                -- gitlab: last pipeline triggered
    pipeline_url    TEXT,
    last_error      TEXT,
    created_at      TEXT COLLATE "C" NOT NULL,
    updated_at      TEXT COLLATE "C" NOT NULL
);
CREATE INDEX spares_by_task ON spares (task_id, spare_index);
CREATE INDEX spares_by_upgrade ON spares (upgrade_id, spare_index);
CREATE INDEX spares_by_release ON spares (release_task_id) WHERE release_task_id IS NOT NULL;
CREATE INDEX spares_due ON spares (next_at) WHERE next_at IS NOT NULL;
