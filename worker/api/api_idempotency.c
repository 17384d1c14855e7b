/* api_idempotency: see api_idempotency.h. */
#include "api_idempotency.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_keys.h"
#include "secret_file.h"

struct api_idempotency {
    char **secrets; /* owned, wiped when freed */
    size_t n;
};

void api_idempotency_free(api_idempotency *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        explicit_bzero(k->secrets[i], strlen(k->secrets[i]));
        free(k->secrets[i]);
    }
    free(k->secrets);
    free(k);
}

api_idempotency *api_idempotency_new(const vf_config *config, vf_error *err)
{
    api_idempotency *k = calloc(1, sizeof *k);
    size_t n = config->api.n_idempotency_secret_files;
    if (!k || (n && !(k->secrets = calloc(n, sizeof *k->secrets)))) {
        free(k);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        char buf[SECRET_FILE_MAX + 1];
        if (secret_file_read("api.idempotency_secret_files",
                             config->api.idempotency_secret_files[i], buf, sizeof buf, err) < 0) {
            api_idempotency_free(k);
            return NULL;
        }
        k->secrets[i] = strdup(buf);
        explicit_bzero(buf, sizeof buf);
        if (!k->secrets[k->n++]) {
            k->n--;
            api_idempotency_free(k);
            vf_error_set(err, VF_ENOMEM, "out of memory");
            return NULL;
        }
    }
    return k;
}

size_t api_idempotency_count(const api_idempotency *k)
{
    return k && k->n ? k->n : 1;
}

void api_idempotency_task_id(const api_idempotency *k, size_t which, const char *name,
                             const unsigned char *digest, const char *key,
                             char task_id[REQUEST_TASK_ID_LEN])
{
    api_idempotency_id(k, which, "idem", name, digest, key, task_id, REQUEST_TASK_ID_LEN);
}

void api_idempotency_id(const api_idempotency *k, size_t which, const char *prefix,
                        const char *name, const unsigned char *digest, const char *key, char *out,
                        size_t size)
{
    const char *holder = name ? name : "";
    size_t message_len = strlen(holder) + 1 + strlen(key);
    unsigned char message[API_KEY_NAME_SIZE + 1 + 256]; /* keys: at most 255 bytes */
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    bool ok = message_len <= sizeof message;
    if (ok) {
        memcpy(message, holder, strlen(holder));
        message[strlen(holder)] = '\n';
        memcpy(message + strlen(holder) + 1, key, strlen(key));
    }
    if (ok && k && which < k->n)
        ok = HMAC(EVP_sha256(), k->secrets[which], (int)strlen(k->secrets[which]), message,
                  message_len, mac, &len) != NULL;
    else if (ok && digest)
        ok =
            HMAC(EVP_sha256(), digest, API_KEY_DIGEST_LEN, message, message_len, mac, &len) != NULL;
    else if (ok)
        ok = EVP_Digest(message, message_len, mac, &len, EVP_sha256(), NULL) == 1;
    ok = ok && len >= 16;
    static const char hex[] = "0123456789abcdef";
    char digits[33];
    for (int i = 0; i < 16; i++) {
        digits[2 * i] = hex[ok ? mac[i] >> 4 : 0];
        digits[2 * i + 1] = hex[ok ? mac[i] & 15 : 0];
    }
    digits[32] = '\0';
    snprintf(out, size, "%s_%s", prefix, digits);
    explicit_bzero(mac, sizeof mac);
}
