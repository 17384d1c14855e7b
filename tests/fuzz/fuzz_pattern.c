/* fuzz_pattern: a request's regex annotation through pattern_new (the RE2
 * checker, then PCRE2) and a few matches under the limits and a budget, as
 * the engine's pre-filter and filters run them. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pattern.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char source[PATTERN_MAX_LEN + 1];
    if (size > PATTERN_MAX_LEN)
        return 0;
    memcpy(source, data, size);
    source[size] = '\0';
    pattern *p = pattern_new(source, NULL);
    if (!p)
        return 0;
    static const char *const subjects[] = {
        "node1", "bm-001", "123456789", "",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    pattern_set_budget(p, 100000);
    for (size_t i = 0; i < sizeof subjects / sizeof subjects[0]; i++)
        (void)pattern_match(p, subjects[i], strlen(subjects[i]));
    pattern_free(p);
    return 0;
}
