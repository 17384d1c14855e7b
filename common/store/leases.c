#include "leases.h"
#include "store_hosts.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

typedef struct owner_parts {
    char host[STORE_OWNER_SIZE];
    long pid;
} owner_parts;

/* "host:pid:random" (store_owner_name); the host name may hold anything but
 * the last two fields are ours. */
static bool parse_owner(const char *owner, owner_parts *out)
{
    const char *last = strrchr(owner, ':');
    if (!last || last == owner)
        return false;
    const char *pid = last - 1;
    while (pid > owner && *pid != ':')
        pid--;
    if (*pid != ':')
        return false;
    char *end = NULL;
    errno = 0;
    out->pid = strtol(pid + 1, &end, 10);
    if (errno || end != last || out->pid <= 0)
        return false;
    snprintf(out->host, sizeof out->host, "%.*s", (int)(pid - owner), owner);
    return true;
}

bool lease_holder_dead(const char *holder, const char *self)
{
    owner_parts theirs, ours;
    if (strcmp(holder, self) == 0 || !parse_owner(holder, &theirs) || !parse_owner(self, &ours) ||
        strcmp(theirs.host, ours.host) != 0)
        return false;
    /* The host part carries "@<pid namespace>.<boot>" (store_owner_name):
     * without it, the same host name may be another container, whose
     * process ids mean other processes. */
    const char *scope = strrchr(ours.host, '@');
    if (!scope || !strchr(scope, '.'))
        return false;
    if (theirs.pid == ours.pid)
        return true; /* same namespace, boot and pid, another life: ours replaced it */
    return kill((pid_t)theirs.pid, 0) < 0 && errno == ESRCH;
}

static void times(char now[STORE_TIME_SIZE], char until[STORE_TIME_SIZE])
{
    int64_t ms = clock_wall_ms();
    store_format_time(ms, now);
    store_format_time(ms + LEASE_TTL_S * 1000, until);
}

/* After a write that should have given `owner` the lease: read who holds
 * it and at which epoch (another worker may have taken it since). */
static int read_held(store *s, const char *name, const char *owner, int64_t *epoch, vf_error *err)
{
    char holder[STORE_OWNER_SIZE];
    int64_t at = 0;
    int found = store_lease_holder(s, name, holder, sizeof holder, &at, err);
    if (found <= 0)
        return found;
    if (strcmp(holder, owner) != 0)
        return 0;
    if (epoch)
        *epoch = at;
    return 1;
}

int lease_hold(store *s, const char *name, const char *owner, int64_t *epoch, vf_error *err)
{
    char now[STORE_TIME_SIZE], until[STORE_TIME_SIZE];
    times(now, until);
    int held = store_lease_acquire(s, name, owner, now, until, err);
    if (held < 0)
        return -1;
    if (held > 0)
        return read_held(s, name, owner, epoch, err);
    char holder[STORE_OWNER_SIZE];
    int found = store_lease_holder(s, name, holder, sizeof holder, NULL, err);
    if (found <= 0)
        return found;
    if (!lease_holder_dead(holder, owner))
        return 0;
    held = store_lease_take_over(s, name, holder, owner, now, until, err);
    if (held <= 0)
        return held;
    return read_held(s, name, owner, epoch, err);
}

int lease_still_held(store *s, const char *name, const char *owner, int64_t epoch, vf_error *err)
{
    int64_t now_at = 0;
    int held = lease_hold(s, name, owner, &now_at, err);
    if (held <= 0)
        return held;
    return now_at == epoch;
}

int lease_renew_all(store *s, const char *owner, vf_error *err)
{
    char now[STORE_TIME_SIZE], until[STORE_TIME_SIZE];
    times(now, until);
    return store_leases_renew(s, owner, until, err) < 0 ? -1 : 0;
}

#define PRESENCE_PREFIX LEASE_PRESENCE_PREFIX

int lease_announce(store *s, const char *owner, vf_error *err)
{
    char name[STORE_OWNER_SIZE + sizeof PRESENCE_PREFIX];
    snprintf(name, sizeof name, PRESENCE_PREFIX "%s", owner);
    return lease_hold(s, name, owner, NULL, err) < 0 ? -1 : 0;
}

void lease_withdraw(store *s, const char *owner)
{
    char name[STORE_OWNER_SIZE + sizeof PRESENCE_PREFIX];
    snprintf(name, sizeof name, PRESENCE_PREFIX "%s", owner);
    vf_error ignored;
    vf_error_init(&ignored);
    (void)store_lease_forget(s, name, owner, &ignored);
}

typedef struct others {
    const char *self;
    int count;
} others;

static int count_other(const char *owner, void *arg)
{
    others *o = arg;
    if (strcmp(owner, o->self) != 0 && !lease_holder_dead(owner, o->self))
        o->count++;
    return 0;
}

int lease_others_alive(store *s, const char *self, int *count, vf_error *err)
{
    char now[STORE_TIME_SIZE], until[STORE_TIME_SIZE];
    times(now, until);
    others o = {self, 0};
    if (store_leases_live(s, PRESENCE_PREFIX, now, count_other, &o, err) < 0)
        return -1;
    *count = o.count;
    return 0;
}
