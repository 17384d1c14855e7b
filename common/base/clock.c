#include "clock.h"

#include <time.h>

int64_t clock_wall_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int64_t clock_mono_ms(void)
{
    return clock_mono_us() / 1000;
}

int64_t clock_seam_mono_ms(const clock_seam *seam)
{
    return seam->mono_ms ? seam->mono_ms(seam->context) : clock_mono_ms();
}
