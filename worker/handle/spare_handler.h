/* spare_handler: one spare.prepare or spare.release message, decided and
 * recorded inside the caller's open store transaction, like task_handler
 * (same context, message and outcome types; the caller acks, publishes the
 * outcome's event and retries exactly as for task.schedule).
 *
 * spare.prepare
 *   not readable                          -> park in virtflow.dead
 *   task id already known, not retrying
 *   nor queued (recorded by virtflow-api) -> ack, nothing again
 *   invalid request (also a cluster that
 *   spare.clusters does not list)         -> failed/invalid + spare.failed
 *                                            (task.failed when upgrade_id itself
 *                                            is unusable: spare.failed needs one)
 *   all `count` spares placed on distinct hosts (spare.anti_affinity strict;
 *   preferred reuses hosts only when too few are left)
 *                                         -> provisioning: one reservation and one
 *                                            spares row per spare, all in this
 *                                            transaction, and spare.provisioning;
 *                                            the spare driver goes on
 *   not all placed, attempts left         -> retrying (nothing reserved) +
 *                                            task.retrying
 *   not all placed, last attempt          -> failed/unschedulable + spare.failed
 *   no inventory                          -> retrying, then failed/exhausted
 *
 * spare.release {"upgrade_id"}
 *   spares of the upgrade still up        -> releasing: each spare handed to the
 *                                            driver to deprovision; it ends the
 *                                            task in released + spare.released
 *   nothing left to release (twice)       -> released at once + spare.released
 *                                            with "spares": [] (harmless)
 *   upgrade id never seen                 -> failed/invalid + spare.failed
 *
 * The engine holds each placement at once (the next message in the batch sees
 * it); on rollback the caller releases every outcome with `reserved`. */
#ifndef VF_SPARE_HANDLER_H
#define VF_SPARE_HANDLER_H

#include <jansson.h>

#include "handler.h"

/* Check a spare.prepare or spare.release body (by `routing_key`) as the
 * handler will, without the store: its fields, the cluster (spare.clusters)
 * and the spares' names (spare.name_pattern). What the store decides (an
 * upgrade that has spares already, one never prepared) is left to the
 * handler. virtflow-api refuses with this before recording anything.
 * Returns 0, or -1 with err VF_EINVAL and the handler's own message. */
int spare_handler_check(const vf_config *config, const char *routing_key, const json_t *body,
                        vf_error *err) __attribute__((warn_unused_result));

/* Decide and record one message. Returns 0 with *out filled, or -1 with err
 * when the store failed (the caller rolls the whole batch back). */
int spare_handler_handle(task_handler *handler, const task_message *msg, task_outcome *out,
                         vf_error *err) __attribute__((warn_unused_result));

/* Expand spare.name_pattern ({upgrade_id}, {cluster}, {index}) into buf.
 * Returns 0, or -1 when the result is empty, longer than 63 bytes or has a
 * character outside [A-Za-z0-9._-] (err VF_EINVAL says which). */
int spare_handler_name(const char *pattern, const char *upgrade_id, const char *cluster, int index,
                       char *buf, size_t size, vf_error *err) __attribute__((warn_unused_result));

#endif
