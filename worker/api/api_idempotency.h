/* api_idempotency: the task id an Idempotency-Key stands for (docs/api.md
 * "Idempotency keys"). The same key from the same key holder is the same
 * task, in the store every replica shares, so the id is computed rather than
 * kept in a table; and it is keyed, so that no one can compute another key
 * holder's id and create that task first (issue 34):
 *
 *   idem_ + the first 32 hex digits of HMAC-SHA256(K, NAME "\n" KEY)
 *
 * where NAME is the key holder's name ("" without api.keys_file) and K is
 *   - the secret in api.idempotency_secret_files' first file, when set (the
 *     others are still looked up: rotation), else
 *   - the SHA-256 of the caller's own API key (the keys file's hash: known to
 *     the server and the holder, not to another key holder), else
 *   - nothing (no keys, no secret: the open API on loopback, where every
 *     caller is one submitter already): SHA-256(NAME "\n" KEY) as before.
 * Replicas agree as long as they read the same secret files and keys file. */
#ifndef VF_API_IDEMPOTENCY_H
#define VF_API_IDEMPOTENCY_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "request.h"
#include "vf_error.h"

/* The SHA-256 of an API key, as api_keys keeps it. */
#define API_KEY_DIGEST_LEN 32

typedef struct api_idempotency api_idempotency;

/* Read api.idempotency_secret_files (secret_file.h: one line each). NULL
 * with err (VF_EIO, VF_EINVAL naming the file, never its content). */
api_idempotency *api_idempotency_new(const vf_config *config, vf_error *err)
    __attribute__((warn_unused_result));

/* Wipes the secrets. NULL is a no-op. */
void api_idempotency_free(api_idempotency *k);

/* How many ids a key may have: one per secret (1 without any). */
size_t api_idempotency_count(const api_idempotency *k);

/* The id of `key` for key holder `name` (NULL: none) under secret number
 * `which` (0: the current one, which new tasks get); `digest` is the
 * caller's key's SHA-256 (NULL: no keys). */
void api_idempotency_task_id(const api_idempotency *k, size_t which, const char *name,
                             const unsigned char *digest, const char *key,
                             char task_id[REQUEST_TASK_ID_LEN]);

/* The same, for any id computed from a key (a redelivery's, "rdl"): `prefix`
 * "_" and the 32 hex digits, into out (size bytes). */
void api_idempotency_id(const api_idempotency *k, size_t which, const char *prefix,
                        const char *name, const unsigned char *digest, const char *key, char *out,
                        size_t size);

#endif
