#include "vf_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void vf_error_init(vf_error *err)
{
    if (!err)
        return;
    err->code = VF_OK;
    err->text[0] = '\0';
}

void vf_error_set(vf_error *err, vf_error_code code, const char *fmt, ...)
{
    if (!err || err->code != VF_OK)
        return;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    va_end(ap);
}

void vf_error_prefix(vf_error *err, const char *fmt, ...)
{
    if (!err || err->code == VF_OK)
        return;
    char prefix[VF_ERROR_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* Build "prefix: text" by hand: both halves are bounded, the result is cut to fit. */
    char joined[VF_ERROR_TEXT];
    size_t used = strnlen(prefix, sizeof joined - 1);
    memcpy(joined, prefix, used);
    const char *separator = ": ";
    for (const char *s = separator; *s && used < sizeof joined - 1; s++)
        joined[used++] = *s;
    size_t rest = strnlen(err->text, sizeof err->text);
    if (rest > sizeof joined - 1 - used)
        rest = sizeof joined - 1 - used;
    memcpy(joined + used, err->text, rest);
    joined[used + rest] = '\0';
    memcpy(err->text, joined, sizeof err->text);
}

bool vf_error_is_set(const vf_error *err)
{
    return err && err->code != VF_OK;
}

const char *vf_error_code_name(vf_error_code code)
{
    switch (code) {
    case VF_OK:
        return "ok";
    case VF_EINVAL:
        return "invalid";
    case VF_ECONFIG:
        return "config";
    case VF_ENOMEM:
        return "nomem";
    case VF_EIO:
        return "io";
    case VF_EUNAVAILABLE:
        return "unavailable";
    case VF_EINTERNAL:
        return "internal";
    case VF_ECONFLICT:
        return "conflict";
    }
    return "unknown";
}
