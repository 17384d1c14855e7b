/* labels: where a host stands, as key/value pairs (`rack: r1`, `pdu: p3`,
 * `zone: z1`, `cluster: pve-east`), as Kubernetes nodes carry topology
 * labels. A request's topology spread (spread.h) groups hosts into failure
 * domains by one key; GET /v1/hosts publishes the domains of every key
 * (docs/scheduling.md "Failure domains").
 *
 *   key    1..47 characters of [A-Za-z0-9._/-] ("rack",
 *          "topology.kubernetes.io/zone"), compared exactly
 *   value  1..31 characters of [A-Za-z0-9._-], compared exactly
 *
 * Up to LABELS_MAX per host, inline in the host's host_traits (traits.h), so
 * a host without labels costs nothing more. No I/O. */
#ifndef VF_LABELS_H
#define VF_LABELS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "vf_error.h"

#define LABEL_KEY_LEN 48   /* 1..47 characters + NUL */
#define LABEL_VALUE_LEN 32 /* 1..31 characters + NUL */
#define LABELS_MAX 8       /* per host */

/* Characters of a key and of a value. */
extern const char label_key_chars[];
extern const char label_value_chars[];

typedef struct label {
    char key[LABEL_KEY_LEN];
    char value[LABEL_VALUE_LEN];
} label;

typedef struct label_set {
    uint8_t n;
    label items[LABELS_MAX];
} label_set;

/* The value of `key` in `set`, or NULL. Valid while `set` is. */
const char *label_set_get(const label_set *set, const char *key);
/* Set `key` to `value` (replacing its value when present). Returns 0, or -1
 * with err (VF_EINVAL): a bad key or value, or more than LABELS_MAX keys. */
int label_set_put(label_set *set, const char *key, const char *value, vf_error *err)
    __attribute__((warn_unused_result));
/* Whether `key` is a well-formed key (the spread's key is checked by it). */
bool label_key_valid(const char *key);

/* Parse a JSON object {"key": "value", ...} into `out` (emptied first); NULL
 * or null is the empty set. err names `what` ("labels.rack: ..."). */
int label_set_parse(const json_t *object, const char *what, label_set *out, vf_error *err)
    __attribute__((warn_unused_result));
/* As a JSON object, owned (NULL on OOM). */
json_t *label_set_to_json(const label_set *set);

#endif
