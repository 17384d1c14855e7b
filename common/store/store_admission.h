/* store_admission: which task places each CAPPX ProxmoxMachine (table
 * admission_machines, schema/017), for virtflow-api's admission webhook
 * (worker/api/api_admission.c, docs/cappx.md). A machine is keyed by
 * "namespace/name", not by the uid of the review that created it: one
 * created again under a new uid is answered from the placement its task
 * holds, and a DELETE review releases that placement and forgets the
 * machine. Part of the store: what store.h says about durability,
 * timestamps, strings, errors and threads holds here too. Each call is a
 * statement of its own (no transaction needed); races between two reviews
 * of one machine are settled by the conditions below. */
#ifndef VF_STORE_ADMISSION_H
#define VF_STORE_ADMISSION_H

#include <stddef.h>

#include "store.h"

/* "namespace/name": 63 + 1 + 253 characters + NUL. */
#define STORE_MACHINE_LEN 318
/* A Kubernetes uid (36) with room to spare. */
#define STORE_OWNER_LEN 64

typedef struct store_admission_machine {
    char task_id[129];           /* the task placing it now */
    char owner[STORE_OWNER_LEN]; /* its first ownerReference's uid; "" none */
} store_admission_machine;

/* Read `machine` into *out. Returns 0 found, 1 none, -1 with err. */
int store_admission_get(store *s, const char *machine, store_admission_machine *out, vf_error *err)
    __attribute__((warn_unused_result));

/* Make `task_id` (of `owner`, "" none) the machine's task at `at`: when the
 * machine has none (`replacing` NULL), or while its task is still
 * `replacing`. Returns 1 set, 0 not (another review got there first: read
 * it again), -1 with err. */
int store_admission_set(store *s, const char *machine, const char *task_id, const char *owner,
                        const char *replacing, const char *at, vf_error *err)
    __attribute__((warn_unused_result));

/* Forget `machine` while its task is `task_id`. Returns 1 forgotten, 0 not
 * (none, or another task now), -1 with err. */
int store_admission_forget(store *s, const char *machine, const char *task_id, vf_error *err)
    __attribute__((warn_unused_result));

#endif
