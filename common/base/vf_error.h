/* vf_error: bounded error detail in the style of jansson's json_error_t.
 *
 * Functions that can fail take an optional `vf_error *err` (NULL is allowed)
 * and fill it on failure. The first error set wins: later calls to
 * vf_error_set on an already-set error are ignored, so the innermost, most
 * precise cause is what the user reads. */
#ifndef VF_ERROR_H
#define VF_ERROR_H

#include <stdbool.h>

/* Room for a remote system's own reason quoted whole behind our context
 * (a broker's reply text alone may take 255 bytes). */
#define VF_ERROR_TEXT 512

typedef enum {
    VF_OK = 0,
    VF_EINVAL,       /* bad input from a user: request, annotation, argument */
    VF_ECONFIG,      /* bad configuration value */
    VF_ENOMEM,       /* allocation failed */
    VF_EIO,          /* file or network I/O failed */
    VF_EUNAVAILABLE, /* a remote system did not answer or answered garbage */
    VF_EINTERNAL,    /* a bug: should not happen */
    VF_ECONFLICT,    /* the store changed under a decision: reload, decide again */
} vf_error_code;

typedef struct vf_error {
    vf_error_code code;
    char text[VF_ERROR_TEXT]; /* human-readable, one line, never a secret */
} vf_error;

/* Reset to "no error". */
void vf_error_init(vf_error *err);

/* Record an error unless one is already recorded. `err` may be NULL. */
void vf_error_set(vf_error *err, vf_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an already-recorded error's text with "prefix: " (used to add the
 * file name or field path as the error travels outwards). No-op if unset. */
void vf_error_prefix(vf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

bool vf_error_is_set(const vf_error *err);

/* Stable lowercase name of a code, for logs and JSON ("invalid", "config", ...). */
const char *vf_error_code_name(vf_error_code code);

#endif
