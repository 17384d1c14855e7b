#include "text_escape.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at in[0..avail), and its code point;
 * 0 when the bytes there are not valid UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing past U+10FFFF). */
static size_t utf8_sequence(const unsigned char *in, size_t avail, uint32_t *code_point)
{
    unsigned char lead = in[0];
    size_t len;
    uint32_t value, min;
    if (lead < 0x80) {
        *code_point = lead;
        return 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
        len = 2, value = lead & 0x1f, min = 0x80;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        len = 3, value = lead & 0x0f, min = 0x800;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        len = 4, value = lead & 0x07, min = 0x10000;
    } else {
        return 0; /* a continuation byte, or a lead byte UTF-8 never uses */
    }
    if (avail < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((in[i] & 0xc0) != 0x80)
            return 0;
        value = (value << 6) | (in[i] & 0x3f);
    }
    if (value < min || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff))
        return 0;
    *code_point = value;
    return len;
}

/* Code points at or above U+0080 that act on a terminal or on how text is laid out. */
static int is_unicode_control(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t text_escape(char *out, size_t size, const char *in, size_t in_len)
{
    const unsigned char *bytes = (const unsigned char *)in;
    size_t need = 0;  /* length of the whole escaped text */
    size_t wrote = 0; /* bytes in out, all whole pieces */
    int cut = 0;      /* once one piece did not fit, later smaller ones must not follow it */
    for (size_t i = 0; i < in_len;) {
        char piece[8];
        size_t piece_len;
        uint32_t cp = 0;
        size_t seq = utf8_sequence(bytes + i, in_len - i, &cp);
        if (seq == 0) {
            piece_len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", bytes[i]);
            seq = 1;
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            piece[0] = '\\';
            piece[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : 't';
            piece_len = 2;
        } else if (cp < 0x20 || cp == 0x7f) {
            piece_len = (size_t)snprintf(piece, sizeof piece, "\\x%02x", (unsigned)cp);
        } else if (is_unicode_control(cp)) {
            piece_len = (size_t)snprintf(piece, sizeof piece, "\\u%04x", (unsigned)cp);
        } else {
            memcpy(piece, bytes + i, seq);
            piece_len = seq;
        }
        if (!cut && size > 0 && wrote + piece_len < size) {
            memcpy(out + wrote, piece, piece_len);
            wrote += piece_len;
        } else {
            cut = 1;
        }
        need += piece_len;
        i += seq;
    }
    if (size > 0)
        out[wrote] = '\0';
    return need;
}

char *text_escape_dup(const char *in)
{
    if (!in)
        return NULL;
    size_t len = strlen(in);
    size_t size = len * TEXT_ESCAPE_GROWTH + 1;
    char *out = malloc(size);
    if (out)
        (void)text_escape(out, size, in, len);
    return out;
}
