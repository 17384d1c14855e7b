/* secret_file: read one secret (the AMQP password, a webhook secret, an API
 * token) from a file, the same way everywhere (docs/contracts.md: secrets come from
 * *_file keys, never from the command line, and are never logged).
 *
 * The file holds one line; surrounding whitespace (the newline editors add)
 * is trimmed. A file that others may read or write still works, but gets a
 * warning naming the key and the path, never the content: anyone on the host
 * can take the secret from it. Group access is not warned about: a 0640 file
 * owned by root and the service's group is the usual way to share one. */
#ifndef VF_SECRET_FILE_H
#define VF_SECRET_FILE_H

#include <stddef.h>

#include "vf_error.h"

/* Largest file accepted, bytes (real secrets are well under 200). */
#define SECRET_FILE_MAX 4096

/* Read the secret in `path` into buf (size bytes, NUL-terminated); `what`
 * names it in the warning ("amqp.password_file"). Returns the secret's length
 * (>= 1), or -1 with err, buf wiped: VF_EIO "PATH: cannot open: <why>" or
 * "PATH: cannot read", VF_EINVAL "PATH: empty", "PATH: larger than N bytes",
 * "PATH: more than one line or control characters". Error texts never quote
 * the content. The caller wipes buf (explicit_bzero) once done with it. */
int secret_file_read(const char *what, const char *path, char *buf, size_t size, vf_error *err)
    __attribute__((warn_unused_result));

#endif
