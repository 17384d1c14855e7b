/* human: amounts as a person reads them (human.h). */
#include "human.h"

#include <stdio.h>

void human_mib(int64_t mib, char out[HUMAN_SIZE])
{
    static const char *const units[] = {"MiB", "GiB", "TiB"};
    int64_t magnitude = mib < 0 ? -mib : mib;
    size_t unit = 0;
    int64_t scale = 1;
    while (unit + 1 < sizeof units / sizeof units[0] && magnitude >= scale * 1024) {
        scale *= 1024;
        unit++;
    }
    if (mib % scale == 0)
        snprintf(out, HUMAN_SIZE, "%lld %s", (long long)(mib / scale), units[unit]);
    else
        snprintf(out, HUMAN_SIZE, "%.1f %s", (double)mib / (double)scale, units[unit]);
}

void human_duration(int64_t seconds, char out[HUMAN_SIZE])
{
    static const struct {
        int64_t seconds;
        const char *name;
    } units[] = {{86400, "d"}, {3600, "h"}, {60, "min"}, {1, "s"}};
    if (seconds <= 0) {
        snprintf(out, HUMAN_SIZE, "0 s");
        return;
    }
    size_t first = 0;
    while (seconds < units[first].seconds)
        first++;
    int64_t major = seconds / units[first].seconds;
    int64_t rest = first + 1 < sizeof units / sizeof units[0]
                       ? seconds % units[first].seconds / units[first + 1].seconds
                       : 0;
    if (rest)
        snprintf(out, HUMAN_SIZE, "%lld %s %lld %s", (long long)major, units[first].name,
                 (long long)rest, units[first + 1].name);
    else
        snprintf(out, HUMAN_SIZE, "%lld %s", (long long)major, units[first].name);
}
