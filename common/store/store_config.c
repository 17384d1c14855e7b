/* store_config: see store_config.h. */
#include "store_config.h"

#include "secret_file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

store *store_config_open(const vf_config *config, store_mode mode, vf_error *err)
{
    if (!config->store.url)
        return store_open(config->store.path, mode, err);
    char password[SECRET_FILE_MAX + 1] = "";
    if (config->store.password_file &&
        secret_file_read("store.password_file", config->store.password_file, password,
                         sizeof password, err) < 0)
        return NULL;
    store_location where = {
        .url = config->store.url,
        .password = config->store.password_file ? password : NULL,
        .ca_file = config->store.ca_file,
        .tls_verify = config->store.tls_verify,
        .statement_timeout_ms = config->store.statement_timeout_ms,
    };
    store *s = store_open_at(&where, mode, err);
    explicit_bzero(password, sizeof password);
    return s;
}

const char *store_config_name(const vf_config *config, char *buf, size_t size)
{
    if (!config->store.url)
        snprintf(buf, size, "%s", config->store.path ? config->store.path : "(none)");
    else
        store_url_for_messages(config->store.url, buf, size);
    return buf;
}

bool store_config_missing(const vf_config *config)
{
    struct stat st;
    return !config->store.url && stat(config->store.path, &st) != 0;
}
