/* source: the three inventory sources behind inventory.c. Each fetch returns
 * an owned, finished hostset or NULL with err filled; none keeps state
 * between calls. Internal to worker/inventory/ (tests use it too). */
#ifndef VF_INVENTORY_SOURCE_H
#define VF_INVENTORY_SOURCE_H

#include <stdbool.h>

#include <jansson.h>

#include "hostset.h"
#include "vf_error.h"

/* Remote access settings shared by the http and proxmox sources. */
typedef struct source_remote {
    const char *url;        /* http: the node API URL; proxmox: https://pve:8006 */
    const char *token_file; /* proxmox: file holding USER@REALM!TOKENID=SECRET */
    double timeout_s;       /* per request */
    const char *ca_file;    /* NULL = system trust store */
    bool tls_verify;
} source_remote;

/* The SHA-256 of the bytes a snapshot was built from (file and http
 * sources): a fetch that reads the same bytes again need not build the same
 * hosts again (a 100,000-host file takes seconds of CPU to parse, every
 * inventory.refresh_s). */
#define SOURCE_DIGEST_SIZE 32
typedef struct source_digest {
    unsigned char bytes[SOURCE_DIGEST_SIZE];
    bool known;
} source_digest;

/* file: YAML or JSON; a list of hosts, or a mapping with `nodes:` and
 * optionally `vmids:`. Errors start with the path. The file is read as a
 * stream, host by host: the memory it takes is the hostset's, not a tree's. */
hostset *source_file_fetch(const char *path, vf_error *err) __attribute__((warn_unused_result));

/* The same unless the file's bytes are `seen`'s (seen->known): then NULL
 * with *unchanged set and err untouched. Otherwise *seen becomes the digest
 * of the very bytes parsed (a file rewritten while it is read is parsed and
 * hashed as read, never hashed in one version and parsed in another). */
hostset *source_file_fetch_since(const char *path, source_digest *seen, bool *unchanged,
                                 vf_error *err) __attribute__((warn_unused_result));

/* The same from `len` bytes of text (the fuzz target's way in); errors
 * without a path. */
hostset *source_file_parse(const char *text, size_t len, vf_error *err)
    __attribute__((warn_unused_result));

/* http: GET url -> JSON array of hosts (or {"nodes": [...]}). Errors name the URL. */
hostset *source_http_fetch(const source_remote *remote, vf_error *err)
    __attribute__((warn_unused_result));

/* The same unless the answer's body is `seen`'s bytes, as the file's above. */
hostset *source_http_fetch_since(const source_remote *remote, source_digest *seen, bool *unchanged,
                                 vf_error *err) __attribute__((warn_unused_result));

/* The node API's answer, host by host (source_http_fetch's parser, and the
 * fuzz target's way in). Returns an owned, finished hostset, or NULL with
 * either `syntax` filled (the body is not JSON; err says "line N: ...") or
 * syntax->text empty and err saying which host is wrong. */
hostset *source_http_parse(const char *body, size_t len, json_error_t *syntax, vf_error *err)
    __attribute__((warn_unused_result));

/* proxmox: GET {url}/api2/json/cluster/resources with an API token. The token
 * is read from token_file at every fetch (so it can be rotated) and never
 * appears in an error or a log line. */
hostset *source_proxmox_fetch(const source_remote *remote, vf_error *err)
    __attribute__((warn_unused_result));

/* The mapping from a cluster/resources response ({"data": [...]}) to hosts;
 * separate from the fetch so it can be tested on fixtures. See source_proxmox.c
 * for the field mapping. */
hostset *source_proxmox_parse(const json_t *root, vf_error *err)
    __attribute__((warn_unused_result));

/* The same, with the cluster's resource pools: `pools` is an array shaped
 * like Proxmox VE's GET /api2/json/pools answer's data with members
 * ([{"poolid", "comment", "members": [{"id", "node", "type", ...}]}]), or
 * NULL. A node belongs to the pool holding one of its storages, and is
 * dedicated when that pool's comment contains PROXMOX_DEDICATED_MARK
 * (source_proxmox.c says why). */
#define PROXMOX_DEDICATED_MARK "virtflow:dedicated"
hostset *source_proxmox_parse_pools(const json_t *root, const json_t *pools, vf_error *err)
    __attribute__((warn_unused_result));

/* The same, every node labelled `cluster: <cluster>` (NULL: no label) unless
 * its pool's comment labels it otherwise (source_proxmox.c). */
#define PROXMOX_CLUSTER_LABEL "cluster"
hostset *source_proxmox_parse_cluster(const json_t *root, const json_t *pools, const char *cluster,
                                      vf_error *err) __attribute__((warn_unused_result));
/* The cluster's name in a GET /api2/json/cluster/status answer ({"data":
 * [{"type": "cluster", "name": ...}, {"type": "node", ...}]}), borrowed from
 * it; NULL for a standalone node (no item of type cluster). */
const char *source_proxmox_cluster_name(const json_t *status);

#endif
