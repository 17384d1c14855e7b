/* api_tls: reading the HTTPS certificate and key files. */
#include "api_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* The whole file into an owned buffer; `marker` must appear in it (a PEM
 * block of the expected kind), so that a swapped or empty file is a
 * configuration error naming it rather than a failed start later. */
static char *read_pem(const char *key, const char *path, const char *marker, bool secret,
                      vf_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int saved = errno;
        vf_error_set(err, VF_ECONFIG, "%s %s: cannot open: %s", key, path, strerror(saved));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > API_TLS_FILE_MAX) {
        vf_error_set(err, VF_ECONFIG, "%s %s: not a regular file of at most %d bytes", key, path,
                     API_TLS_FILE_MAX);
        close(fd);
        return NULL;
    }
    if (secret && (st.st_mode & S_IROTH))
        log_warn("%s %s: other users may read the private key (chmod o-r)", key, path);
    size_t size = (size_t)st.st_size;
    char *text = malloc(size + 1);
    size_t got = 0;
    while (text && got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!text || got != size) {
        if (text) {
            OPENSSL_cleanse(text, size);
            free(text);
        }
        vf_error_set(err, text ? VF_ECONFIG : VF_ENOMEM, "%s %s: cannot read", key, path);
        return NULL;
    }
    text[size] = '\0';
    if (!strstr(text, marker) || strlen(text) != size) {
        OPENSSL_cleanse(text, size);
        free(text);
        vf_error_set(err, VF_ECONFIG, "%s %s: no PEM %s in it", key, path,
                     secret ? "private key" : "certificate");
        return NULL;
    }
    return text;
}

int api_tls_load(const vf_config *config, char **cert, char **key, vf_error *err)
{
    *cert = *key = NULL;
    if (!config->api.tls_cert_file && !config->api.tls_key_file)
        return 0;
    if (!config->api.tls_cert_file || !config->api.tls_key_file) {
        vf_error_set(err, VF_ECONFIG, "api.tls_cert_file and api.tls_key_file go together");
        return -1;
    }
    *cert = read_pem("api.tls_cert_file", config->api.tls_cert_file, "-----BEGIN CERTIFICATE-----",
                     false, err);
    if (*cert)
        *key =
            read_pem("api.tls_key_file", config->api.tls_key_file, "PRIVATE KEY-----", true, err);
    if (!*key) {
        free(*cert);
        *cert = NULL;
        return -1;
    }
    return 0;
}

void api_tls_free_key(char *key)
{
    if (!key)
        return;
    OPENSSL_cleanse(key, strlen(key));
    free(key);
}
