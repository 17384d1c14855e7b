/* fuzz_text_escape: any bytes a publisher can put in a message id or an error
 * text, through text_escape (what virtflowctl and the logs show).
 *
 * Checks, for every input: nothing a terminal acts on comes out (no C0, no
 * DEL, and escaping the output again changes nothing, so it holds no C1, bidi
 * control or invalid UTF-8 either); the returned length is the output's; the
 * growth bound holds; a small buffer gets a prefix of the whole output. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text_escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t full_size = size * TEXT_ESCAPE_GROWTH + 1;
    char *full = malloc(full_size);
    char *again = malloc(full_size);
    if (!full || !again)
        abort();
    size_t need = text_escape(full, full_size, (const char *)data, size);
    if (need != strlen(full) || need > size * TEXT_ESCAPE_GROWTH)
        abort();
    for (size_t i = 0; i < need; i++)
        if ((unsigned char)full[i] < 0x20 || (unsigned char)full[i] == 0x7f)
            abort();
    if (text_escape(again, full_size, full, need) != need || memcmp(again, full, need) != 0)
        abort();
    char small[16];
    size_t small_need = text_escape(small, sizeof small, (const char *)data, size);
    if (small_need != need || strncmp(small, full, strlen(small)) != 0 ||
        (need < sizeof small && strcmp(small, full) != 0))
        abort();
    free(full);
    free(again);
    return 0;
}
