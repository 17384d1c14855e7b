/* fixtext: see fixtext.h. */
#include "fixtext.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void fixtext_init(fixtext *t, char *buf, size_t size, size_t len)
{
    t->buf = buf;
    t->size = size;
    t->len = len < size ? len : size - 1;
    t->buf[t->len] = '\0';
}

void fixtext_put(fixtext *t, const char *bytes, size_t n)
{
    if (t->len < t->size - 1) {
        size_t room = t->size - 1 - t->len;
        size_t copy = n < room ? n : room;
        memcpy(t->buf + t->len, bytes, copy);
        t->buf[t->len + copy] = '\0';
    }
    t->len += n;
}

void fixtext_puts(fixtext *t, const char *s)
{
    fixtext_put(t, s, strlen(s));
}

void fixtext_uint(fixtext *t, uint64_t v)
{
    char digits[20];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    fixtext_put(t, digits + at, sizeof digits - at);
}

void fixtext_fixed2(fixtext *t, double v)
{
    /* 100 v rounded to the nearest integer is what "%.2f" writes, ties to
     * even on the exact binary value. Below 10^6 the product's own rounding
     * error is under 10^-8, so the nearest integer is certain unless 100 v
     * lies within 10^-6 of a half: those, and negative, huge or non-finite
     * values, go to snprintf. */
    double scaled = v * 100.0;
    double whole = floor(scaled);
    double frac = scaled - whole;
    if (!(v >= 0 && v < 1e6) || signbit(v) || fabs(frac - 0.5) < 1e-6) {
        char text[400];
        int n = snprintf(text, sizeof text, "%.2f", v);
        fixtext_put(t, text, n > 0 ? (size_t)n : 0);
        return;
    }
    uint64_t cents = (uint64_t)whole + (frac > 0.5);
    fixtext_uint(t, cents / 100);
    char tail[3] = {'.', (char)('0' + cents % 100 / 10), (char)('0' + cents % 10)};
    fixtext_put(t, tail, sizeof tail);
}
