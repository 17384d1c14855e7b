/* strbuf: the one string builder (after jansson's private strbuffer), for
 * every text built by pieces: HTML pages, the metrics exposition, request
 * bodies. A value type: zeroed (or strbuf_init) is empty. Appends never
 * fail loudly: once memory runs out the builder is marked failed, drops
 * every later append, and strbuf_take answers NULL, so a caller checks
 * once, at the end. */
#ifndef VF_STRBUF_H
#define VF_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct strbuf {
    char *data; /* NUL-terminated once anything was appended; NULL before */
    size_t len;
    size_t cap;
    bool failed; /* memory ran out */
} strbuf;

void strbuf_init(strbuf *b);

/* Frees the text; the builder is empty again. */
void strbuf_close(strbuf *b);

/* Room for `more` bytes and a NUL; false when failed. */
bool strbuf_reserve(strbuf *b, size_t more);

void strbuf_append(strbuf *b, const void *bytes, size_t n);
void strbuf_puts(strbuf *b, const char *s);
void strbuf_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* The text, owned by the caller ("" when nothing was appended), or NULL
 * when memory ran out; the builder is empty again either way. */
char *strbuf_take(strbuf *b) __attribute__((warn_unused_result));

#endif
