/* api_keys: virtflow-api's keys file (api.keys_file, docs/api.md "Keys").
 *
 * One key a line, the key itself never written down, only its SHA-256:
 *
 *   # comment
 *   sha256:<64 hex digits> NAME SCOPE[,SCOPE...]
 *
 * NAME (1 to 64 of A-Z a-z 0-9 . _ : -) says who holds the key: it goes into
 * the history of the tasks the key submits and into log lines, never the key.
 * SCOPES are submit, read, release and admin (admin: every scope).
 *
 * A request presents its key as `Authorization: Bearer KEY`; the key is
 * hashed and compared with every line's hash by CRYPTO_memcmp, all lines
 * every time, so the time taken says nothing about which line, if any, came
 * close. */
#ifndef VF_API_KEYS_H
#define VF_API_KEYS_H

#include <stddef.h>

#include "vf_error.h"

enum {
    API_SCOPE_SUBMIT = 1 << 0,
    API_SCOPE_READ = 1 << 1,
    API_SCOPE_RELEASE = 1 << 2,
    API_SCOPE_ADMIN = 1 << 3,
};

/* A key's name: at most this many bytes with the NUL. */
#define API_KEY_NAME_SIZE 65

typedef struct api_keys api_keys;

/* Read `path`. NULL with err: VF_EIO (cannot open or read), VF_ECONFIG
 * "PATH:LINE: ..." for a malformed line, a scope that does not exist, a
 * name or hash given twice, or a file without any key. */
api_keys *api_keys_load(const char *path, vf_error *err) __attribute__((warn_unused_result));

/* NULL is a no-op. */
void api_keys_free(api_keys *keys);

/* How many keys the file holds. */
size_t api_keys_count(const api_keys *keys);

/* The key presented in an Authorization header value ("Bearer KEY"; NULL or
 * another scheme finds nothing). Returns its scopes (API_SCOPE_*, admin
 * expanded to all) and copies its name into name[API_KEY_NAME_SIZE], or 0
 * when no key matches. */
int api_keys_check(const api_keys *keys, const char *authorization, char name[API_KEY_NAME_SIZE]);

/* api_keys_check, and the key's SHA-256 into digest[32] when one matches:
 * a secret the server shares with that key's holder alone
 * (api_idempotency.h keys its ids with it). */
int api_keys_check_digest(const api_keys *keys, const char *authorization,
                          char name[API_KEY_NAME_SIZE], unsigned char digest[32]);

/* The keys in force in a running virtflow-api: the file's keys behind a
 * lock, swapped whole by a reload (SIGHUP, the main thread) while requests
 * check them (the HTTP thread). */
typedef struct api_key_ring api_key_ring;

/* api_keys_load(path) as the keys in force; `path` is copied, for reloads.
 * NULL with err as api_keys_load's. */
api_key_ring *api_key_ring_load(const char *path, vf_error *err)
    __attribute__((warn_unused_result));

/* NULL is a no-op. */
void api_key_ring_free(api_key_ring *ring);

/* How many keys are in force; 0 for NULL. Any thread. */
size_t api_key_ring_count(api_key_ring *ring);

/* api_keys_check_digest on the keys in force. Any thread. */
int api_key_ring_check(api_key_ring *ring, const char *authorization, char name[API_KEY_NAME_SIZE],
                       unsigned char digest[32]);

/* Read the file again and put its keys in force, *was set to how many were
 * before. Returns 0, or -1 with err (api_keys_load's) leaving the keys in
 * force as they were. Any thread. */
int api_key_ring_reload(api_key_ring *ring, size_t *was, vf_error *err)
    __attribute__((warn_unused_result));

/* Parse "submit,read" into API_SCOPE_* bits; -1 for an empty list or an
 * unknown scope. */
int api_keys_parse_scopes(const char *text);

/* A new random key ("vfk_" and 64 hex digits, from RAND_bytes) into
 * key[key_size] and its file line for `name` and `scopes` (as given) into
 * line[line_size]. Returns 0, or -1 with err (VF_EINVAL for a bad name or
 * scopes, VF_EINTERNAL when no randomness). */
int api_keys_new_key(const char *name, const char *scopes, char *key, size_t key_size, char *line,
                     size_t line_size, vf_error *err) __attribute__((warn_unused_result));

#endif
