#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

void strbuf_init(strbuf *b)
{
    memset(b, 0, sizeof *b);
}

void strbuf_close(strbuf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

bool strbuf_reserve(strbuf *b, size_t more)
{
    if (b->failed)
        return false;
    if (more > SIZE_MAX / 2 - b->len ||
        grow_array((void **)&b->data, &b->cap, b->len + more + 1, 1) < 0) {
        b->failed = true;
        return false;
    }
    return true;
}

void strbuf_append(strbuf *b, const void *bytes, size_t n)
{
    if (!strbuf_reserve(b, n))
        return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void strbuf_puts(strbuf *b, const char *s)
{
    strbuf_append(b, s, strlen(s));
}

void strbuf_vprintf(strbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        b->failed = true;
    else if (strbuf_reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void strbuf_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *strbuf_take(strbuf *b)
{
    char *text = NULL;
    if (!b->failed)
        text = b->data ? b->data : strdup("");
    else
        free(b->data);
    memset(b, 0, sizeof *b);
    return text;
}
