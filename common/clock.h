/* clock: the two clocks the programs read. Wall time for what is stored or
 * compared with stored times (timestamps, expiries, leases); monotonic time
 * for measuring durations, which a clock step must not bend. */
#ifndef VF_CLOCK_H
#define VF_CLOCK_H

#include <stdint.h>

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t clock_wall_ms(void);

/* Milliseconds on CLOCK_MONOTONIC: only differences mean anything. */
int64_t clock_mono_ms(void);

/* Microseconds on CLOCK_MONOTONIC: only differences mean anything. */
int64_t clock_mono_us(void);

#endif
