/* human: amounts as a person reads them (the console, virtflowctl's tables):
 * memory in MiB as "512 MiB", "8 GiB", "1.5 TiB"; durations in seconds as
 * "45 s", "12 min", "3 h 5 min", "2 d 4 h". JSON output keeps the raw
 * numbers; these are for text only. */
#ifndef VF_HUMAN_H
#define VF_HUMAN_H

#include <stddef.h>
#include <stdint.h>

/* Room for either, whatever the number (two 64-bit integers and their units). */
#define HUMAN_SIZE 64

/* `mib` MiB in the largest unit of MiB, GiB, TiB that keeps it at 1 or
 * more, with one decimal when that unit does not divide it (7.5 GiB). */
void human_mib(int64_t mib, char out[HUMAN_SIZE]);

/* `seconds` in its two largest units of d, h, min, s ("3 h 5 min"), the
 * second left out when zero; negative values as 0 s. */
void human_duration(int64_t seconds, char out[HUMAN_SIZE]);

#endif
