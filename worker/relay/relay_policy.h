/* relay_policy: the relay's decisions that need no I/O — which receivers an
 * event type goes to, when the next attempt is due, and what a Retry-After
 * header asks for. Kept apart so each rule is unit-tested on its own. */
#ifndef VF_RELAY_POLICY_H
#define VF_RELAY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vf_error.h"

/* Longest wait a Retry-After header may impose, seconds (a receiver asking
 * for more gets this; the schedule's own delays are not capped). */
#define RELAY_RETRY_AFTER_MAX_S 86400.0

/* Fraction of a scheduled delay added or removed at random, so deliveries
 * that failed together do not all come back in the same second. */
#define RELAY_JITTER 0.1

/* Does event type `type` match one pattern? "*" matches every type but the
 * operational ones (receiver.*, delivery.*: event_types_is_operational),
 * "prefix.*" every type that starts with "prefix." (at any depth: "task.*"
 * matches "task.completed" and "task.x.y", not "task" nor "tasks.x"), and
 * anything else only the same type. */
bool relay_policy_match(const char *pattern, const char *type);

/* Any of n patterns. */
bool relay_policy_match_any(char *const *patterns, size_t n, const char *type);

/* Parse a Retry-After value: delta-seconds ("120") or an HTTP date
 * ("Wed, 21 Oct 2015 07:28:00 GMT", IMF-fixdate), the latter relative to
 * `now` (Unix seconds). Returns 0 with *delay_s set (>= 0, a date in the past
 * gives 0, capped at RELAY_RETRY_AFTER_MAX_S), or -1 if the value is neither. */
int relay_policy_retry_after(const char *value, int64_t now, double *delay_s);

/* Delay before the next attempt after `attempts` attempts have been made
 * (>= 1) and the last one failed. schedule_s[i] is the delay before attempt
 * i+1 (so schedule_s[0] is the first attempt's), and there are n_schedule
 * attempts in all: returns -1 when attempts >= n_schedule (the delivery has
 * failed for good). Otherwise the scheduled delay, moved by up to
 * ±RELAY_JITTER of itself using random01 (a number in [0, 1)), and at least
 * retry_after_s when the receiver gave one (< 0: none). */
double relay_policy_next_delay(const int *schedule_s, size_t n_schedule, int attempts,
                               double retry_after_s, double random01);

/* Longest event id accepted, bytes. */
#define RELAY_EVENT_ID_MAX 256

/* Check one message taken off virtflow.relay: `body_len` bytes of JSON (need
 * not be NUL-terminated) holding an object with a non-empty string "type"
 * and an "id" (else `message_id`, may be NULL) of 1..RELAY_EVENT_ID_MAX
 * printable ASCII characters without spaces, since the id travels in the
 * webhook-id header and the signed string and must not break a header line.
 * Returns 0 with *id and *type owned copies (free both), or -1 with err:
 * VF_EINVAL with the reason to dead-letter the message, VF_ENOMEM. */
int relay_policy_event(const void *body, size_t body_len, const char *message_id, char **id,
                       char **type, vf_error *err) __attribute__((warn_unused_result));

/* Copy a string a publisher chose (message id, user name) into `out` so it
 * shows as one harmless line: printable ASCII is kept except '\\' and '"',
 * everything else (control characters, escape sequences, bytes >= 0x80)
 * becomes \\xNN; a text that does not fit ends in "...". NULL reads as
 * "(none)". `size` >= 8. */
void relay_policy_escape(const char *text, char *out, size_t size);

#endif
