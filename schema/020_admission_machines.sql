-- virtflow SQLite store, schema version 20: which task places each CAPPX
-- ProxmoxMachine (virtflow-api's admission webhook, docs/cappx.md).
--
-- The API server gives every AdmissionReview a uid of its own, and a
-- machine created again (the first review answered "still placing", or the
-- object re-applied) comes with a new one. The webhook keys its placement by
-- the machine, namespace/name, instead: a machine created again is answered
-- from the placement its task holds, not given a second, and a DELETE review
-- releases that placement and forgets the machine.
--   machine  "namespace/name" of the ProxmoxMachine
--   task_id  the task placing it now (its first review's "cappx-" + uid)
--   owner    the uid of the machine's first ownerReference when it had one
--            (a machine of another owner under the same name releases the
--            old placement and takes a new one); '' none
-- Never edit a released migration: add 021_*.sql instead.

CREATE TABLE admission_machines (
    machine    TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL,
    owner      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
