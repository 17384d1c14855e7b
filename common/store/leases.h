/* leases: a worker's hold on the jobs that one worker drives at a time (the
 * spare driver, the outbox sweep, the relay's deliveries; store_hosts.h
 * "leases").
 *
 * A lease lasts LEASE_TTL_S and the worker's checkpoint thread renews every
 * lease it holds every LEASE_RENEW_S, so a lease outlives a long step (a
 * provisioner run) while its worker lives, and passes to another worker
 * within LEASE_TTL_S of its death. A holder paused longer than that (SIGSTOP,
 * a frozen VM) loses the lease without knowing: its epoch (store_hosts.h) is
 * what stops it. It checks the epoch before each call to the outside
 * (lease_still_held) and records each step under store_lease_fence.
 *
 * A holder that is known dead is not waited for: a process that no longer
 * runs, or an earlier life of this very process id (a process restarted in
 * place), but only when its owner name (store_owner_name) shows the same
 * host name, PID namespace and boot as ours: a process id means one process
 * only there. Two containers under one host name have two PID namespaces,
 * and each may well be process 1; a holder named without that scope (an
 * older version, no /proc) is never judged dead, only waited for. A failed
 * renewal (a busy or unreachable store) says nothing about who holds the
 * lease: only a read showing another holder does. */
#ifndef VF_LEASES_H
#define VF_LEASES_H

#include <stdbool.h>

#include "store.h"

#define LEASE_TTL_S 15
#define LEASE_RENEW_S 5

/* Take or renew lease `name` for `owner` (store_owner_name). Returns 1 when
 * `owner` holds it, with its epoch in *epoch (may be NULL), 0 when another
 * live (or unknowable) worker does, -1 with err on a store error (which says
 * nothing about who holds it). */
int lease_hold(store *s, const char *name, const char *owner, int64_t *epoch, vf_error *err)
    __attribute__((warn_unused_result));

/* Before a call to the outside made under the epoch `epoch`: renew the lease
 * and check that `owner` still holds it at that epoch. Returns 1 yes, 0 stale
 * (another holder, or a later epoch: stop acting, read the state again), -1
 * with err when the store cannot tell (do not act either). */
int lease_still_held(store *s, const char *name, const char *owner, int64_t epoch, vf_error *err)
    __attribute__((warn_unused_result));

/* Renew every lease of `owner`. Returns 0 or -1. */
int lease_renew_all(store *s, const char *owner, vf_error *err) __attribute__((warn_unused_result));

/* The name prefix of those leases. */
#define LEASE_PRESENCE_PREFIX "worker:"

/* A worker announces itself with a lease of its own ("worker:" + owner),
 * renewed like the others, so that workers sharing a store know whether any
 * other one is alive. Returns 0 or -1. */
int lease_announce(store *s, const char *owner, vf_error *err) __attribute__((warn_unused_result));
void lease_withdraw(store *s, const char *owner);

/* How many other workers announced themselves and are alive (not expired,
 * not known dead), into *count. Returns 0 or -1. */
int lease_others_alive(store *s, const char *self, int *count, vf_error *err)
    __attribute__((warn_unused_result));

/* Whether `holder` (an owner name) is certainly dead, seen from `self`. */
bool lease_holder_dead(const char *holder, const char *self);

#endif
