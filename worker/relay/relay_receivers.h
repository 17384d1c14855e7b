/* relay_receivers: the configured receivers made ready to send to — secrets
 * read and parsed, URL checked, extra headers turned into request lines.
 *
 * Everything a receiver needs is checked here, at start, so a bad receiver
 * stops the relay with a message naming its key instead of failing every
 * delivery later. Secrets stay in memory only; no error text quotes one. */
#ifndef VF_RELAY_RECEIVERS_H
#define VF_RELAY_RECEIVERS_H

#include <stddef.h>

#include "config.h"
#include "relay_flow.h"
#include "signature.h"
#include "vf_error.h"

typedef struct relay_receiver {
    const config_receiver *config; /* borrowed from the vf_config */
    signature_key *keys;           /* every secret, in order: files first, then the env var */
    size_t n_keys;
    char **header_lines; /* "Name: value" for the extra headers */
    size_t n_header_lines;
    char safe_url[512];   /* the URL without credentials or query, for logs */
    int in_flight;        /* requests running now */
    relay_flow flow;      /* its pace and circuit breaker (relay_flow.h) */
    int last_code;        /* of its last failed attempt (0: no answer), for receiver.disabled */
    char last_error[600]; /* an operational event quotes up to 512 bytes of it */
} relay_receiver;

/* Build the receivers of config->relay (disabled ones included, so their
 * deliveries can still be listed; callers skip them). On failure returns -1
 * with err: VF_ECONFIG "relay.receivers[I].KEY: what is wrong" (a secret file
 * that cannot be read or does not hold a whsec_ secret, an environment
 * variable unset or invalid, a URL libcurl cannot parse or without a host).
 * On success *out (owned, relay_receivers_free) and *n are set. */
int relay_receivers_load(const vf_config *config, relay_receiver **out, size_t *n, vf_error *err)
    __attribute__((warn_unused_result));

/* Wipes the keys and frees; NULL is a no-op. */
void relay_receivers_free(relay_receiver *receivers, size_t n);

#endif
