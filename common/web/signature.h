/* signature: Standard Webhooks signing and verification (docs/contracts.md "Webhooks").
 *
 * A secret is "whsec_" followed by the base64 of the key bytes. The signed
 * string is "<id>.<timestamp>.<body>" (timestamp in Unix seconds, decimal),
 * the MAC is HMAC-SHA256 with the decoded key, and one signature reads
 * "v1,<base64 MAC>". While a secret is rotated the relay signs with every key
 * it has, and the webhook-signature header holds the signatures separated by
 * single spaces; a receiver accepts the message when any v1 entry matches any
 * key it holds. Entries of other versions are ignored.
 *
 * Key material lives in signature_key values the caller keeps; nothing here
 * logs or copies it elsewhere, and error texts never quote a secret. */
#ifndef VF_SIGNATURE_H
#define VF_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

#define SIGNATURE_KEY_MAX 128     /* bytes of decoded key accepted */
#define SIGNATURE_TOLERANCE_S 300 /* a timestamp further than this from now is stale */
/* "v1," + base64 of 32 bytes (44 characters) + NUL. */
#define SIGNATURE_SIZE 48

typedef struct signature_key {
    unsigned char bytes[SIGNATURE_KEY_MAX];
    size_t len; /* bytes, >= 1 */
} signature_key;

typedef enum {
    SIGNATURE_VALID = 0,
    SIGNATURE_BAD_SIGNATURE,   /* well-formed, but no entry matches any key */
    SIGNATURE_STALE_TIMESTAMP, /* more than the tolerance away from now */
    SIGNATURE_MALFORMED,       /* id, timestamp or signature header cannot be parsed */
    SIGNATURE_BAD_SECRET,      /* no usable key was given */
} signature_result;

/* Parse a "whsec_<base64>" secret (surrounding whitespace, such as the newline
 * at the end of a secret file, is ignored). Returns 0 with *key filled, or -1
 * with err (VF_EINVAL: missing prefix, not base64, empty or longer than
 * SIGNATURE_KEY_MAX bytes). The error text never contains the secret. */
int signature_key_parse(const char *secret, signature_key *key, vf_error *err)
    __attribute__((warn_unused_result));

/* Read a secret file (one line, see secret_file.h) and parse it. Errors as
 * signature_key_parse or secret_file_read, each naming the path. */
int signature_key_read_file(const char *path, signature_key *key, vf_error *err)
    __attribute__((warn_unused_result));

/* One signature "v1,<base64>" of (id, timestamp, body) into out. Returns 0,
 * or -1 if OpenSSL fails (err VF_EINTERNAL). */
int signature_sign(const signature_key *key, const char *id, int64_t timestamp, const void *body,
                   size_t body_len, char out[SIGNATURE_SIZE], vf_error *err)
    __attribute__((warn_unused_result));

/* The whole webhook-signature header value: one signature per key, separated
 * by spaces, into out (size bytes). Returns 0, or -1 with err when n_keys is 0,
 * the buffer is too small (VF_EINVAL) or OpenSSL fails. */
int signature_header(const signature_key *keys, size_t n_keys, const char *id, int64_t timestamp,
                     const void *body, size_t body_len, char *out, size_t size, vf_error *err)
    __attribute__((warn_unused_result));

/* Verify a received message. `timestamp` is the webhook-timestamp header as
 * text (decimal Unix seconds), `header` the webhook-signature header, `now`
 * the current Unix time and tolerance_s the largest accepted distance (use
 * SIGNATURE_TOLERANCE_S). Checks, in this order: keys present (BAD_SECRET),
 * id, timestamp and header well-formed (MALFORMED), timestamp within the
 * tolerance (STALE_TIMESTAMP), then every v1 entry against every key in
 * constant time (BAD_SIGNATURE when none matches). */
signature_result signature_verify(const signature_key *keys, size_t n_keys, const char *id,
                                  const char *timestamp, const char *header, const void *body,
                                  size_t body_len, int64_t now, int64_t tolerance_s);

/* "valid", "bad signature", "stale timestamp", "malformed header", "bad secret". */
const char *signature_result_text(signature_result result);

#endif
