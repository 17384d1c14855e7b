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

/* A monotonic clock a test may replace: mono_ms(context) when set, else
 * clock_mono_ms. Zeroed, it is the real clock. */
typedef struct clock_seam {
    int64_t (*mono_ms)(void *context);
    void *context;
} clock_seam;

/* Milliseconds on the seam's clock. */
int64_t clock_seam_mono_ms(const clock_seam *seam);

#endif
