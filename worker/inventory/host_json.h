/* host_json: one inventory host from a JSON object (file and http sources).
 *
 * Fields (docs/contracts.md, Inventory sources); null counts as absent:
 *   name              required, 1-63 characters of [A-Za-z0-9._-]
 *   ip                text, default ""
 *   pool              1-63 characters of [A-Za-z0-9._-], default "default"
 *   dedicated         true/false, default false
 *   model             text up to 95 bytes, default ""
 *   cpu               required, cores, number > 0
 *   memory            required, MiB, number >= 1 (fractions are dropped)
 *   storage           GiB free for VM disks, number >= 0, default 0 (fractions dropped)
 *   usage_cpu         measured CPU use, fraction 0..1; absent: 0 for allocated_cpu,
 *                     unknown (has_usage_cpu false) for TargetLoadPacking
 *   usage_mem         measured memory use, fraction 0..1; likewise
 *   allocated_cpu     vCPUs committed to guests, >= 0; when absent usage_cpu * cpu
 *   allocated_memory  MiB committed to guests, >= 0; when absent usage_mem * memory
 *   max_vms           guest slots, integer >= 0; when absent 1000 (virtflow-scheduler's
 *                     node API always sends it; 0 means "place nothing here")
 *   current_vms       guests running now, integer >= 0, default 0
 *   status            online | offline | maintenance | unknown, default online
 *   vmids             list of integers 100..999999999 used by guests on the host
 * Unknown fields are ignored (the node API may carry more), but a known field
 * with the wrong type or range is an error, never silently defaulted.
 *
 * Errors read "host 3 (bm-003): cpu: expected a number > 0" or, when the name
 * itself is wrong, "host 2: name: missing"; `index` is 1-based. */
#ifndef VF_HOST_JSON_H
#define VF_HOST_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "hostset.h"
#include "vf_error.h"

#define HOST_JSON_DEFAULT_MAX_VMS 1000

/* Parse `object` (host number `index`) and append it and its vmids to `set`.
 * Returns 0, or -1 with err filled (VF_EINVAL, VF_ENOMEM); on error `set`
 * may hold some of this host's vmids, so callers discard the set. */
int host_json_add(hostset *set, const json_t *object, size_t index, vf_error *err)
    __attribute__((warn_unused_result));

/* host_json_add in the shape the streaming loaders call (yaml_json_load_each,
 * json_each_loadb): `set` is the hostset, `index` counts from 0. Each host
 * becomes a compact `host` as soon as it is read, so an inventory never
 * exists as one tree (200 MiB at 100,000 hosts). */
int host_json_add_each(const json_t *item, size_t index, void *set, vf_error *err)
    __attribute__((warn_unused_result));

/* Append every host of the JSON array `hosts`. Returns 0 or -1 (err filled). */
int host_json_add_all(hostset *set, const json_t *hosts, vf_error *err)
    __attribute__((warn_unused_result));

/* Append the used vmids listed in the JSON array `vmids`; `what` names the
 * list in messages ("vmids"). Returns 0 or -1 (err filled). */
int host_json_add_vmids(hostset *set, const json_t *vmids, const char *what, vf_error *err)
    __attribute__((warn_unused_result));

/* A whole inventory document: a top-level array of hosts, or an object with
 * a `nodes` array and an optional `vmids` array (other keys are ignored).
 * Returns an owned, finished hostset, or NULL with err filled. */
hostset *host_json_inventory(const json_t *root, vf_error *err) __attribute__((warn_unused_result));

/* The same into `set`, which may already hold the hosts of the document's
 * list (added one by one while it was read, the list in `root` left empty):
 * appends what `root` still lists, then finishes `set`. Returns 0, or -1 with
 * err filled; on error callers discard `set`. */
int host_json_inventory_into(hostset *set, const json_t *root, vf_error *err)
    __attribute__((warn_unused_result));

/* The inverse: a finished hostset as an inventory document, {"nodes": [...],
 * "vmids": [...]}, every field written (usage_cpu / usage_mem only when
 * measured), each host's guests as its vmids, the other used vmids at the top.
 * host_json_inventory reads it back into the same hostset; the same hostset
 * always gives the same document, in the same order (hosts by name), so its
 * dump (JSON_COMPACT) can be hashed to tell changes apart (inventory
 * snapshots, common/store/store_inventory.h). Returns a new reference, or NULL when
 * out of memory. */
json_t *host_json_from_hostset(const hostset *set) __attribute__((warn_unused_result));

/* The same document's JSON_COMPACT text, written host by host: the same
 * bytes as json_dumps(host_json_from_hostset(set), JSON_COMPACT) without
 * the whole tree (at 100,000 hosts the tree is about 200 MB, the text 30 MB;
 * the worker writes it into its inventory snapshots). Owned; NULL when out
 * of memory. */
char *host_json_dump_hostset(const hostset *set) __attribute__((warn_unused_result));

/* Hex SHA-256 and its NUL. */
#define HOST_JSON_HASH_SIZE 65

/* A hash of what host_json_from_hostset would write for `set`, computed from
 * the hostset itself (about 100 times cheaper than writing the document at
 * 10,000 hosts): equal for hostsets that write the same document, different
 * otherwise. The worker compares it at every refresh and writes the document
 * only when it changed. Returns 0, or -1 (out of memory; out is ""). */
int host_json_content_hash(const hostset *set, char out[HOST_JSON_HASH_SIZE])
    __attribute__((warn_unused_result));

#endif
