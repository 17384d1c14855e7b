/* text_escape: make text from outside (clients, the broker, receivers) safe to
 * show on an operator's terminal or in a log line. A message id carrying
 * "ESC ] 0 ; title BEL" would otherwise retitle the terminal that prints it,
 * "ESC [ 2 J" clear it, and a newline forge a second log line.
 *
 * What is escaped, so it shows as visible text instead of acting:
 *   - C0 controls and DEL: \n \r \t, the others as \xHH (ESC is \x1b);
 *   - C1 controls U+0080..U+009F, which terminals also obey: \u0080..\u009f;
 *   - Unicode controls that reorder or break lines (U+2028, U+2029,
 *     U+202A..U+202E, U+2066..U+2069): \u202e and so on;
 *   - every byte that is not part of valid UTF-8 (overlong forms, surrogates
 *     and values past U+10FFFF included): \xHH.
 * Everything else, valid UTF-8 text included, is kept as it is. A backslash is
 * kept too, so "\x1b" typed by a client reads the same as an escaped ESC: the
 * output is for reading, not for decoding back. */
#ifndef VF_TEXT_ESCAPE_H
#define VF_TEXT_ESCAPE_H

#include <stddef.h>

/* One input byte becomes at most this many output bytes ("\xff"). */
#define TEXT_ESCAPE_GROWTH 4

/* Write `in` (in_len bytes; a NUL byte inside is escaped too) escaped into
 * out[size], always NUL-terminated when size > 0. When it does not fit, the
 * output stops before the first escape or character that would not fit whole.
 * Returns the length the whole escaped text needs, without the NUL, as
 * snprintf does: a result >= size means the output was cut. */
size_t text_escape(char *out, size_t size, const char *in, size_t in_len);

/* The escaped copy of the NUL-terminated `in`, owned by the caller (free()).
 * NULL when `in` is NULL or memory runs out. */
char *text_escape_dup(const char *in);

#endif
