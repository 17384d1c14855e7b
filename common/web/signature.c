/* signature: Standard Webhooks HMAC-SHA256 signatures through OpenSSL. */
#include "signature.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secret_file.h"

#define SECRET_PREFIX "whsec_"
#define MAC_LEN 32           /* SHA-256 */
#define MAC_BASE64_LEN 44    /* base64 of 32 bytes, with one '=' */
#define SECRET_TEXT_MAX 1024 /* characters of a secret accepted before decoding */

static bool is_base64_char(unsigned char c)
{
    return isalnum(c) || c == '+' || c == '/';
}

/* Strict base64 decode: only the standard alphabet, padding optional but
 * correct when present. EVP_DecodeBlock itself neither checks padding nor
 * removes the zero bytes it stands for, so both are done here. Returns the
 * decoded length, or -1. */
static int base64_decode(const char *text, size_t len, unsigned char *out, size_t out_size)
{
    size_t data = len;
    while (data > 0 && text[data - 1] == '=')
        data--;
    if (len - data > 2 || data == 0 || data % 4 == 1)
        return -1;
    if (len != data && len % 4 != 0) /* padding present but the wrong amount */
        return -1;
    for (size_t i = 0; i < data; i++)
        if (!is_base64_char((unsigned char)text[i]))
            return -1;
    size_t padded = (data + 3) / 4 * 4;
    size_t decoded = data / 4 * 3 + (data % 4 ? data % 4 - 1 : 0);
    if (decoded > out_size || padded > SECRET_TEXT_MAX + 4)
        return -1;
    char in[SECRET_TEXT_MAX + 8];
    unsigned char buf[(SECRET_TEXT_MAX + 8) / 4 * 3];
    memcpy(in, text, data);
    memset(in + data, '=', padded - data);
    int n = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)padded);
    OPENSSL_cleanse(in, sizeof in);
    if (n < 0 || (size_t)n < decoded) {
        OPENSSL_cleanse(buf, sizeof buf);
        return -1;
    }
    memcpy(out, buf, decoded);
    OPENSSL_cleanse(buf, sizeof buf);
    return (int)decoded;
}

int signature_key_parse(const char *secret, signature_key *key, vf_error *err)
{
    memset(key, 0, sizeof *key);
    if (!secret) {
        vf_error_set(err, VF_EINVAL, "no secret given");
        return -1;
    }
    while (isspace((unsigned char)*secret))
        secret++;
    size_t len = strlen(secret);
    while (len > 0 && isspace((unsigned char)secret[len - 1]))
        len--;
    size_t prefix = sizeof SECRET_PREFIX - 1;
    if (len < prefix || strncmp(secret, SECRET_PREFIX, prefix) != 0) {
        vf_error_set(err, VF_EINVAL, "expected a secret starting with \"" SECRET_PREFIX "\"");
        return -1;
    }
    if (len - prefix > SECRET_TEXT_MAX) {
        vf_error_set(err, VF_EINVAL, "secret too long (at most %d bytes of key)",
                     SIGNATURE_KEY_MAX);
        return -1;
    }
    int n = base64_decode(secret + prefix, len - prefix, key->bytes, sizeof key->bytes);
    if (n <= 0) {
        vf_error_set(err, VF_EINVAL,
                     "expected \"" SECRET_PREFIX "\" followed by base64 of 1-%d bytes",
                     SIGNATURE_KEY_MAX);
        memset(key, 0, sizeof *key);
        return -1;
    }
    key->len = (size_t)n;
    return 0;
}

int signature_key_read_file(const char *path, signature_key *key, vf_error *err)
{
    memset(key, 0, sizeof *key);
    char text[SECRET_TEXT_MAX + 64];
    int rc = -1;
    vf_error inner;
    vf_error_init(&inner);
    if (secret_file_read("webhook secret file", path, text, sizeof text, err) < 0)
        goto out;
    if (signature_key_parse(text, key, &inner) < 0) {
        vf_error_set(err, VF_EINVAL, "%s: %s", path, inner.text);
        goto out;
    }
    rc = 0;
out:
    OPENSSL_cleanse(text, sizeof text);
    return rc;
}

/* HMAC over "<id>.<timestamp>.<body>" without building the string, through
 * OpenSSL 3's EVP_MAC (the HMAC_CTX functions are deprecated there). */
static int mac(const signature_key *key, const char *id, int64_t timestamp, const void *body,
               size_t body_len, unsigned char out[MAC_LEN])
{
    char ts[24];
    int ts_len = snprintf(ts, sizeof ts, "%" PRId64, timestamp);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
    size_t out_len = 0;
    int rc = -1;
    if (!ctx)
        goto out;
    if (EVP_MAC_init(ctx, key->bytes, key->len, params) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)id, strlen(id)) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)".", 1) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)ts, (size_t)ts_len) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)".", 1) != 1 ||
        (body_len > 0 && EVP_MAC_update(ctx, body, body_len) != 1) ||
        EVP_MAC_final(ctx, out, &out_len, MAC_LEN) != 1 || out_len != MAC_LEN)
        goto out;
    rc = 0;
out:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    return rc;
}

int signature_sign(const signature_key *key, const char *id, int64_t timestamp, const void *body,
                   size_t body_len, char out[SIGNATURE_SIZE], vf_error *err)
{
    unsigned char digest[MAC_LEN];
    if (!key || key->len == 0 || mac(key, id, timestamp, body, body_len, digest) < 0) {
        vf_error_set(err, VF_EINTERNAL, "HMAC-SHA256 failed");
        return -1;
    }
    memcpy(out, "v1,", 3);
    EVP_EncodeBlock((unsigned char *)out + 3, digest, MAC_LEN); /* NUL-terminates */
    return 0;
}

int signature_header(const signature_key *keys, size_t n_keys, const char *id, int64_t timestamp,
                     const void *body, size_t body_len, char *out, size_t size, vf_error *err)
{
    if (n_keys == 0) {
        vf_error_set(err, VF_EINVAL, "no signing key");
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < n_keys; i++) {
        char one[SIGNATURE_SIZE];
        if (signature_sign(&keys[i], id, timestamp, body, body_len, one, err) < 0)
            return -1;
        size_t need = strlen(one) + (i ? 1 : 0);
        if (used + need + 1 > size) {
            vf_error_set(err, VF_EINVAL, "signature header buffer too small");
            return -1;
        }
        if (i)
            out[used++] = ' ';
        memcpy(out + used, one, strlen(one) + 1);
        used += strlen(one);
    }
    return 0;
}

/* Decimal Unix seconds, digits only (a sign or spaces make it malformed). */
static int parse_timestamp(const char *text, int64_t *out)
{
    if (!text || !*text || strlen(text) > 18)
        return -1;
    int64_t value = 0;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        value = value * 10 + (*c - '0');
    }
    *out = value;
    return 0;
}

signature_result signature_verify(const signature_key *keys, size_t n_keys, const char *id,
                                  const char *timestamp, const char *header, const void *body,
                                  size_t body_len, int64_t now, int64_t tolerance_s)
{
    size_t usable = 0;
    for (size_t i = 0; i < n_keys; i++)
        if (keys[i].len > 0)
            usable++;
    if (usable == 0)
        return SIGNATURE_BAD_SECRET;
    int64_t ts = 0;
    if (!id || !*id || strchr(id, '\n') || parse_timestamp(timestamp, &ts) < 0 || !header)
        return SIGNATURE_MALFORMED;

    /* Every space-separated entry must look like "<version>,<value>"; only
     * v1 values that decode to a 32-byte MAC are candidates. */
    unsigned char candidates[16][MAC_LEN];
    size_t n_candidates = 0;
    size_t entries = 0;
    const char *p = header;
    while (*p) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *comma = memchr(p, ',', len);
        if (!comma || comma == p || comma == p + len - 1)
            return SIGNATURE_MALFORMED;
        entries++;
        size_t version_len = (size_t)(comma - p);
        if (version_len == 2 && memcmp(p, "v1", 2) == 0) {
            const char *value = comma + 1;
            size_t value_len = len - version_len - 1;
            unsigned char decoded[MAC_LEN + 3];
            if (value_len != MAC_BASE64_LEN ||
                base64_decode(value, value_len, decoded, sizeof decoded) != MAC_LEN)
                return SIGNATURE_MALFORMED;
            if (n_candidates < sizeof candidates / sizeof candidates[0])
                memcpy(candidates[n_candidates++], decoded, MAC_LEN);
        }
        p += len;
    }
    if (entries == 0)
        return SIGNATURE_MALFORMED;

    int64_t distance = now > ts ? now - ts : ts - now;
    if (distance > tolerance_s)
        return SIGNATURE_STALE_TIMESTAMP;

    /* Compare against every candidate without stopping early, so the time
     * taken does not tell which entry or how many bytes matched. */
    int matched = 0;
    for (size_t k = 0; k < n_keys; k++) {
        if (keys[k].len == 0)
            continue;
        unsigned char expected[MAC_LEN];
        if (mac(&keys[k], id, ts, body, body_len, expected) < 0)
            return SIGNATURE_BAD_SECRET;
        for (size_t c = 0; c < n_candidates; c++)
            matched |= CRYPTO_memcmp(expected, candidates[c], MAC_LEN) == 0;
        OPENSSL_cleanse(expected, sizeof expected);
    }
    return matched ? SIGNATURE_VALID : SIGNATURE_BAD_SIGNATURE;
}

const char *signature_result_text(signature_result result)
{
    switch (result) {
    case SIGNATURE_VALID:
        return "valid";
    case SIGNATURE_BAD_SIGNATURE:
        return "bad signature";
    case SIGNATURE_STALE_TIMESTAMP:
        return "stale timestamp";
    case SIGNATURE_MALFORMED:
        return "malformed header";
    case SIGNATURE_BAD_SECRET:
        return "bad secret";
    }
    return "unknown";
}
