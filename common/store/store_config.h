/* store_config: open the store a configuration names (store.path, or
 * store.url with store.password_file and the TLS keys), the one way every
 * program does it, so the worker, the relay and every virtflowctl command
 * work against SQLite and PostgreSQL alike. */
#ifndef VF_STORE_CONFIG_H
#define VF_STORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "store.h"

/* store_open_at for the configured store; the password is read from
 * store.password_file for this call only (never logged, wiped after).
 * Errors as store_open_at, and those of secret_file_read. */
store *store_config_open(const vf_config *config, store_mode mode, vf_error *err)
    __attribute__((warn_unused_result));

/* The store's name for messages: store.path, or store.url without a
 * password. Returns buf (size bytes, NUL-terminated). */
const char *store_config_name(const vf_config *config, char *buf, size_t size);

/* Whether the store cannot exist yet: an SQLite file that is missing. A
 * PostgreSQL database always may (opening it tells). */
bool store_config_missing(const vf_config *config);

#endif
