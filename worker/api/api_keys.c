#include "api_keys.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grow.h"

#define DIGEST_LEN 32     /* SHA-256 */
#define KEY_PREFIX "vfk_" /* says what a leaked string is, for secret scanners */
#define KEY_RANDOM_BYTES 32
#define MAX_KEYS 10000
#define MAX_PRESENTED 512 /* longer Bearer values are refused unhashed */

typedef struct key_entry {
    unsigned char digest[DIGEST_LEN];
    char name[API_KEY_NAME_SIZE];
    int scopes;
} key_entry;

struct api_keys {
    key_entry *entries;
    size_t count;
};

static const struct {
    const char *name;
    int bit;
} scope_names[] = {
    {"submit", API_SCOPE_SUBMIT},
    {"read", API_SCOPE_READ},
    {"release", API_SCOPE_RELEASE},
    {"admin", API_SCOPE_ADMIN},
};

int api_keys_parse_scopes(const char *text)
{
    int scopes = 0;
    const char *p = text;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        int bit = 0;
        for (size_t i = 0; i < sizeof scope_names / sizeof scope_names[0]; i++)
            if (strlen(scope_names[i].name) == len && strncmp(p, scope_names[i].name, len) == 0)
                bit = scope_names[i].bit;
        if (!bit)
            return -1;
        scopes |= bit;
        p += len;
        if (*p == ',')
            p++;
    }
    return scopes ? scopes : -1;
}

static bool name_is_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= API_KEY_NAME_SIZE)
        return false;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._:-", *c))
            return false;
    return true;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool sha256(const char *text, size_t len, unsigned char out[DIGEST_LEN])
{
    unsigned int n = 0;
    return EVP_Digest(text, len, out, &n, EVP_sha256(), NULL) && n == DIGEST_LEN;
}

/* One line "sha256:HEX NAME SCOPES" into *e; a message for the error. */
static const char *parse_line(char *line, key_entry *e)
{
    char *fields[4] = {0};
    int n = 0;
    for (char *tok = strtok(line, " \t"); tok; tok = strtok(NULL, " \t"))
        if (n < 4)
            fields[n++] = tok;
        else
            return "expected sha256:HEX NAME SCOPES (more fields than that)";
    if (n != 3)
        return "expected sha256:HEX NAME SCOPES";
    if (strncmp(fields[0], "sha256:", 7) != 0 || strlen(fields[0] + 7) != 2 * DIGEST_LEN)
        return "the hash is not sha256: and 64 hex digits (virtflow-api new-key writes a line)";
    for (int i = 0; i < DIGEST_LEN; i++) {
        int hi = hex_value(fields[0][7 + 2 * i]), lo = hex_value(fields[0][8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return "the hash is not sha256: and 64 hex digits";
        e->digest[i] = (unsigned char)(hi * 16 + lo);
    }
    if (!name_is_valid(fields[1]))
        return "the name is not 1 to 64 of A-Z a-z 0-9 . _ : -";
    snprintf(e->name, sizeof e->name, "%s", fields[1]);
    e->scopes = api_keys_parse_scopes(fields[2]);
    if (e->scopes < 0)
        return "scopes are a comma-separated list of submit, read, release, admin";
    if (e->scopes & API_SCOPE_ADMIN)
        e->scopes |= API_SCOPE_SUBMIT | API_SCOPE_READ | API_SCOPE_RELEASE;
    return NULL;
}

api_keys *api_keys_load(const char *path, vf_error *err)
{
    api_keys *keys = calloc(1, sizeof *keys);
    FILE *f = fopen(path, "r");
    char line[1024];
    int line_no = 0;
    size_t cap = 0; /* keys->entries' room */
    if (!keys) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        goto fail;
    }
    if (!f) {
        vf_error_set(err, VF_EIO, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    while (fgets(line, sizeof line, f)) {
        line_no++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            vf_error_set(err, VF_ECONFIG, "%s:%d: line too long", path, line_no);
            goto fail;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *start = line + strspn(line, " \t");
        if (*start == '\0' || *start == '#')
            continue;
        if (keys->count >= MAX_KEYS) {
            vf_error_set(err, VF_ECONFIG, "%s: more than %d keys", path, MAX_KEYS);
            goto fail;
        }
        key_entry e;
        memset(&e, 0, sizeof e);
        const char *problem = parse_line(start, &e);
        for (size_t i = 0; !problem && i < keys->count; i++) {
            if (memcmp(keys->entries[i].digest, e.digest, DIGEST_LEN) == 0)
                problem = "the same key twice";
            else if (strcmp(keys->entries[i].name, e.name) == 0)
                problem = "the same name twice (a name says who submitted a task)";
        }
        if (problem) {
            vf_error_set(err, VF_ECONFIG, "%s:%d: %s", path, line_no, problem);
            goto fail;
        }
        if (grow_array((void **)&keys->entries, &cap, keys->count + 1, sizeof *keys->entries) < 0) {
            vf_error_set(err, VF_ENOMEM, "out of memory");
            goto fail;
        }
        keys->entries[keys->count++] = e;
    }
    if (ferror(f)) {
        vf_error_set(err, VF_EIO, "%s: cannot read", path);
        goto fail;
    }
    if (keys->count == 0) {
        vf_error_set(err, VF_ECONFIG, "%s: no keys (virtflow-api new-key NAME SCOPES writes one)",
                     path);
        goto fail;
    }
    fclose(f);
    return keys;
fail:
    if (f)
        fclose(f);
    api_keys_free(keys);
    return NULL;
}

void api_keys_free(api_keys *keys)
{
    if (!keys)
        return;
    free(keys->entries);
    free(keys);
}

size_t api_keys_count(const api_keys *keys)
{
    return keys ? keys->count : 0;
}

int api_keys_check(const api_keys *keys, const char *authorization, char name[API_KEY_NAME_SIZE])
{
    unsigned char digest[DIGEST_LEN];
    int scopes = api_keys_check_digest(keys, authorization, name, digest);
    OPENSSL_cleanse(digest, sizeof digest);
    return scopes;
}

int api_keys_check_digest(const api_keys *keys, const char *authorization,
                          char name[API_KEY_NAME_SIZE], unsigned char matched[32])
{
    name[0] = '\0';
    if (!keys || !authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return 0;
    const char *key = authorization + 7;
    while (*key == ' ')
        key++;
    size_t len = strlen(key);
    while (len > 0 && key[len - 1] == ' ')
        len--;
    unsigned char digest[DIGEST_LEN];
    if (len == 0 || len > MAX_PRESENTED || !sha256(key, len, digest))
        return 0;
    /* Every line, without stopping at a match. */
    size_t found = keys->count;
    for (size_t i = 0; i < keys->count; i++)
        if (CRYPTO_memcmp(keys->entries[i].digest, digest, DIGEST_LEN) == 0)
            found = i;
    if (found == keys->count)
        return 0;
    snprintf(name, API_KEY_NAME_SIZE, "%s", keys->entries[found].name);
    memcpy(matched, keys->entries[found].digest, DIGEST_LEN);
    return keys->entries[found].scopes;
}

struct api_key_ring {
    char *path;
    pthread_mutex_t lock;
    api_keys *keys; /* under lock */
};

api_key_ring *api_key_ring_load(const char *path, vf_error *err)
{
    api_key_ring *ring = calloc(1, sizeof *ring);
    if (!ring || !(ring->path = strdup(path))) {
        free(ring);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&ring->lock, NULL);
    if (!(ring->keys = api_keys_load(path, err))) {
        api_key_ring_free(ring);
        return NULL;
    }
    return ring;
}

void api_key_ring_free(api_key_ring *ring)
{
    if (!ring)
        return;
    api_keys_free(ring->keys);
    pthread_mutex_destroy(&ring->lock);
    free(ring->path);
    free(ring);
}

size_t api_key_ring_count(api_key_ring *ring)
{
    if (!ring)
        return 0;
    pthread_mutex_lock(&ring->lock);
    size_t n = api_keys_count(ring->keys);
    pthread_mutex_unlock(&ring->lock);
    return n;
}

int api_key_ring_check(api_key_ring *ring, const char *authorization, char name[API_KEY_NAME_SIZE],
                       unsigned char digest[32])
{
    pthread_mutex_lock(&ring->lock);
    int scopes = api_keys_check_digest(ring->keys, authorization, name, digest);
    pthread_mutex_unlock(&ring->lock);
    return scopes;
}

int api_key_ring_reload(api_key_ring *ring, size_t *was, vf_error *err)
{
    /* Read outside the lock: requests go on with the old keys meanwhile. */
    api_keys *fresh = api_keys_load(ring->path, err);
    if (!fresh)
        return -1;
    pthread_mutex_lock(&ring->lock);
    api_keys *old = ring->keys;
    ring->keys = fresh;
    pthread_mutex_unlock(&ring->lock);
    *was = api_keys_count(old);
    api_keys_free(old);
    return 0;
}

static void to_hex(const unsigned char *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

int api_keys_new_key(const char *name, const char *scopes, char *key, size_t key_size, char *line,
                     size_t line_size, vf_error *err)
{
    if (!name_is_valid(name)) {
        vf_error_set(err, VF_EINVAL, "the name is not 1 to 64 of A-Z a-z 0-9 . _ : -");
        return -1;
    }
    if (api_keys_parse_scopes(scopes) < 0) {
        vf_error_set(err, VF_EINVAL,
                     "scopes are a comma-separated list of submit, read, release, admin");
        return -1;
    }
    unsigned char random[KEY_RANDOM_BYTES], digest[DIGEST_LEN];
    char random_hex[2 * KEY_RANDOM_BYTES + 1], digest_hex[2 * DIGEST_LEN + 1];
    if (key_size < sizeof KEY_PREFIX + sizeof random_hex ||
        RAND_bytes(random, sizeof random) != 1) {
        vf_error_set(err, VF_EINTERNAL, "no randomness for a key");
        return -1;
    }
    to_hex(random, sizeof random, random_hex);
    OPENSSL_cleanse(random, sizeof random);
    snprintf(key, key_size, "%s%s", KEY_PREFIX, random_hex);
    OPENSSL_cleanse(random_hex, sizeof random_hex);
    if (!sha256(key, strlen(key), digest)) {
        vf_error_set(err, VF_EINTERNAL, "SHA-256 unavailable");
        return -1;
    }
    to_hex(digest, sizeof digest, digest_hex);
    if (snprintf(line, line_size, "sha256:%s %s %s", digest_hex, name, scopes) >= (int)line_size) {
        vf_error_set(err, VF_EINVAL, "name and scopes too long");
        return -1;
    }
    return 0;
}
