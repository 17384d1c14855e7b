/* config_rules: keys that must agree with each other (config.h "keys that
 * must agree"): the one table the checks, `virtflowctl config check` and the
 * reference page (config_reference.c) read. */
#include "config.h"
#include "config_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int64_t config_bound_reservation_keep_s(const vf_config *config)
{
    return config->inventory.max_age_s;
}

int64_t config_final_task_keep_s(const vf_config *config)
{
    int64_t longest = 0;
    for (size_t i = 0; i < config->retry.n_delays; i++)
        if (config->retry.delays_s[i] > longest)
            longest = config->retry.delays_s[i];
    return longest;
}

/* store.retention shorter than a window `keep` (seconds) named `window`,
 * whose rows (`kept`) retention keeps that long anyway: says so. */
static bool retention_shorter(const vf_config *c, int64_t keep, const char *window,
                              const char *kept, char *why, size_t size)
{
    if (c->store.retention_s >= keep)
        return false;
    snprintf(why, size,
             "store.retention (%" PRId64 " s) is shorter than %s (%" PRId64
             " s): %s are kept %" PRId64 " s, the rest %" PRId64 " s",
             c->store.retention_s, window, keep, kept, keep, c->store.retention_s);
    return true;
}

static bool retention_under_inventory_window(const vf_config *c, char *why, size_t size)
{
    return retention_shorter(c, config_bound_reservation_keep_s(c), "inventory.max_age_s",
                             "reservations an inventory ended, and their tasks, once bound and "
                             "expired,",
                             why, size);
}

static bool retention_under_retry_delay(const vf_config *c, char *why, size_t size)
{
    return retention_shorter(c, config_final_task_keep_s(c), "the longest of retry.delays_s",
                             "final tasks, after their last change,", why, size);
}

static bool reservation_ends_before_refresh(const vf_config *c, char *why, size_t size)
{
    if (c->scheduler.reservation_ttl_s > c->inventory.refresh_s)
        return false;
    snprintf(why, size,
             "scheduler.reservation_ttl_s (%d s) is not longer than inventory.refresh_s (%d s): "
             "a placement's reservation would end before the refresh that can first show its "
             "VM, and its host and vmid be given again meanwhile",
             c->scheduler.reservation_ttl_s, c->inventory.refresh_s);
    return true;
}

/* A placement's VM shows only after a refresh at best: a grace within one
 * would let a preemption take a placement whose VM is being made. Checked
 * once the whole file is read, so the two sections may come in any order. */
static bool grace_within_refresh(const vf_config *c, char *why, size_t size)
{
    if (c->scheduler.preemption_grace_s > c->inventory.refresh_s)
        return false;
    snprintf(why, size,
             "scheduler.preemption_grace_s (%d s) is not longer than inventory.refresh_s (%d s): "
             "a preemption could take a placement whose client is still making its VM, before "
             "any inventory can show it",
             c->scheduler.preemption_grace_s, c->inventory.refresh_s);
    return true;
}

static bool own_login_untrusted(const vf_config *c, char *why, size_t size)
{
    for (size_t i = 0; i < c->amqp.n_urls; i++) {
        char user[256];
        if (!config_url_user(c->amqp.urls[i], user, sizeof user) ||
            config_trusts_publisher(c, user))
            continue;
        snprintf(why, size,
                 "relay.trusted_publishers does not name %s, the user amqp.urls logs in as: this "
                 "worker's own rechecks and attempt counts are not believed (a recheck is decided "
                 "as an attempt of its own), and a relay reading this list would not deliver "
                 "its events",
                 user);
        return true;
    }
    return false;
}

static const config_rule rules[] = {
    {.keys = "`store.retention`, `inventory.max_age_s`",
     .relation = "`store.retention` >= `inventory.max_age_s`",
     .guarantee = "a reservation an inventory ended is still counted by every worker whose "
                  "snapshot is older (no second VM on a full host, no vmid twice: "
                  "[guarantees.md](guarantees.md#what-the-worker-guarantees), workers whose "
                  "inventories differ)",
     .outcome = CONFIG_RULE_KEEPS,
     .handling = "retention (the worker's job and `virtflowctl prune`) keeps such a reservation, "
                 "and the final task it belongs to, until it was bound and expired at least "
                 "`inventory.max_age_s` ago, whatever `store.retention` says (keep the "
                 "workers' clocks in sync: fetch times of several machines are compared); a "
                 "warning at start names both ages",
     .broken = retention_under_inventory_window},
    {.keys = "`store.retention`, `retry.delays_s`",
     .relation = "`store.retention` >= the longest of `retry.delays_s`",
     .guarantee = "nothing is scheduled twice: the delayed copy of a task that was completed "
                  "meanwhile (by a recheck, or decided after a retry-now) comes back from its "
                  "tier and must find the task final",
     .outcome = CONFIG_RULE_KEEPS,
     .handling = "retention keeps final tasks until their last change is at least the longest "
                 "delay old, whatever `store.retention` says; a warning at start. A copy that "
                 "then waits in a deep work queue longer still is not covered: keep "
                 "`store.retention` well above both",
     .broken = retention_under_retry_delay},
    {.keys = "`scheduler.reservation_ttl_s`, `inventory.refresh_s`",
     .relation = "`scheduler.reservation_ttl_s` > `inventory.refresh_s`",
     .guarantee = "never overbook: a placement's reservation lasts until an inventory shows its "
                  "VM",
     .outcome = CONFIG_RULE_REFUSES,
     .handling = "exit 3, `config check` too: the reservation would end before the "
                 "refresh that can first show its VM, so no deployment with it places safely; "
                 "give the TTL the refresh and a VM's creation",
     .broken = reservation_ends_before_refresh},
    {.keys = "`scheduler.preemption_grace_s`, `inventory.refresh_s`",
     .relation = "`scheduler.preemption_grace_s` > `inventory.refresh_s`",
     .guarantee = "preemption never takes a promise: an answered placement is not taken while "
                  "its VM may be in the making",
     .outcome = CONFIG_RULE_REFUSES,
     .handling = "exit 3, `config check` too (the sections in any order)",
     .broken = grace_within_refresh},
    {.keys = "`inventory.max_age_s`, `inventory.refresh_s`",
     .relation = "`inventory.max_age_s` > `inventory.refresh_s`",
     .guarantee = "placements go on between two ordinary refreshes; a stale inventory stops them",
     .outcome = CONFIG_RULE_REFUSES,
     .handling = "exit 3, while the file is read (its line named)"},
    {.keys = "`relay.trusted_publishers`, `amqp.urls`",
     .relation = "when set, `relay.trusted_publishers` names the user `amqp.urls` logs in as "
                 "(the worker's configuration)",
     .guarantee = "a recheck spends no attempt (a storm of releases cannot fail a task early); "
                  "the relay delivers the worker's events",
     .outcome = CONFIG_RULE_WARNS,
     .handling = "a warning at the worker's start and in `config check`, not a refusal: such a "
                 "worker still places correctly (attempts are counted in the store), and the "
                 "relay's own configuration rightly names another user than its own",
     .program = "virtflow-worker",
     .broken = own_login_untrusted},
};

const config_rule *config_rules(size_t *count)
{
    *count = sizeof rules / sizeof rules[0];
    return rules;
}

int config_check_rules(const vf_config *config, const char *program, config_rule_report_fn report,
                       void *user, vf_error *err)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const config_rule *rule = &rules[i];
        char why[512];
        if (!rule->broken || (program && rule->program && strcmp(program, rule->program) != 0) ||
            !rule->broken(config, why, sizeof why))
            continue;
        if (report)
            report(rule, why, user);
        if (rule->outcome == CONFIG_RULE_REFUSES) {
            vf_error_set(err, VF_ECONFIG, "%s%s%s", config->path ? config->path : "",
                         config->path ? ": " : "", why);
            return -1;
        }
    }
    return 0;
}
