/* api_tls: the PEM files of api.tls_cert_file and api.tls_key_file, read at
 * start for httpd's HTTPS (docs/api.md "TLS"). */
#ifndef VF_API_TLS_H
#define VF_API_TLS_H

#include "config.h"
#include "vf_error.h"

/* Largest PEM file accepted, bytes: a certificate chain of a few
 * certificates is a few KiB. */
#define API_TLS_FILE_MAX (256 * 1024)

/* Read both files into owned, NUL-terminated buffers (*cert, *key; NULL
 * when the configuration has no TLS). A key file that others than its owner
 * and group may read gets a warning naming the path. Returns 0, or -1 with
 * err (VF_ECONFIG: "PATH: cannot open: why", "PATH: no PEM ... in it", "PATH:
 * larger than N bytes"); the key's bytes never reach a message. Free the
 * key with api_tls_free_key, which wipes it. */
int api_tls_load(const vf_config *config, char **cert, char **key, vf_error *err)
    __attribute__((warn_unused_result));

/* Wipe and free a key api_tls_load read; NULL is a no-op. */
void api_tls_free_key(char *key);

#endif
