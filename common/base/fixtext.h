/* fixtext: a text built into a fixed array by pieces, truncated as snprintf
 * truncates (always NUL-terminated, the length it would have had kept), for
 * the texts made on every decision (the decision's message): printf's format
 * parsing and its exact decimal conversion were a quarter of a decision's
 * instructions. Numbers come out byte for byte as printf writes them
 * (test_fixtext compares them over millions of values); a value the quick
 * way cannot be sure of is handed to snprintf. */
#ifndef VF_FIXTEXT_H
#define VF_FIXTEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct fixtext {
    char *buf;
    size_t size; /* of buf, > 0 */
    size_t len;  /* what the text would take untruncated (snprintf's answer) */
} fixtext;

/* Starts an empty text in buf (size > 0), or continues after its first
 * `len` bytes (len < size). */
void fixtext_init(fixtext *t, char *buf, size_t size, size_t len);

/* Whether anything was cut: len >= size. */
static inline int fixtext_truncated(const fixtext *t)
{
    return t->len >= t->size;
}

void fixtext_put(fixtext *t, const char *bytes, size_t n);
void fixtext_puts(fixtext *t, const char *s);
/* As "%llu". */
void fixtext_uint(fixtext *t, uint64_t v);
/* As "%.2f". */
void fixtext_fixed2(fixtext *t, double v);

#endif
