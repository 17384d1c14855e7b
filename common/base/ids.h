/* ids: identifiers for tasks and events, and the timestamps that go with them. */
#ifndef VF_IDS_H
#define VF_IDS_H

#include <stddef.h>
#include <stdint.h>

#define IDS_LEN 48 /* bytes incl. NUL: prefix + "_" + 32 hex digits */

/* "<prefix>_<32 lowercase hex digits>" of a time-ordered UUID (RFC 9562
 * version 7: milliseconds, then 74 random bits), e.g. evt_019a...; ids made
 * in a later millisecond sort after earlier ones. Prefix at most 8
 * characters. */
void ids_new(const char *prefix, char out[IDS_LEN]);

/* RFC 3339 UTC with seconds, "2026-11-22T01:02:03Z" (event timestamps). */
void ids_rfc3339(int64_t unix_s, char out[32]);

/* Parse the store's "YYYY-MM-DDTHH:MM:SS[.mmm]Z" into Unix seconds.
 * Returns 0, or -1 when the text is not in that form. */
int ids_parse_time(const char *text, int64_t *unix_s);
/* Likewise into Unix milliseconds (the first three digits of the fraction:
 * two times of one second keep their order). Returns 0 or -1. */
int ids_parse_time_ms(const char *text, int64_t *unix_ms);

#endif
