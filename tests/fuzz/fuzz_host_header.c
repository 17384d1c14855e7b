/* fuzz_host_header: any bytes a client can put in a Host header, through
 * httpd_host_allowed (the console's DNS-rebinding check, common/web/httpd.c).
 *
 * Checks, for every input: no crash or overread; the answer does not depend
 * on letter case (host names do not); a name allowed with no configured
 * names stays allowed with some (configured names only add); and an input
 * with a byte no host name holds (a slash, an '@', a space) is refused, so
 * "evil.example/127.0.0.1" or "127.0.0.1@evil.example" cannot pass. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"console.example.org", "fd00::7", "[fd00::8]"};
    char *value = malloc(size + 1), *upper = malloc(size + 1);
    if (!value || !upper)
        abort();
    memcpy(value, data, size);
    value[size] = '\0';
    for (size_t i = 0; i <= size; i++)
        upper[i] = (char)toupper((unsigned char)value[i]);
    bool bare = httpd_host_allowed(value, NULL, 0);
    bool with_names = httpd_host_allowed(value, names, 3);
    if (bare && !with_names)
        abort();
    if (httpd_host_allowed(upper, names, 3) != with_names)
        abort();
    if (with_names && strpbrk(value, "/@ \t\\?#"))
        abort();
    free(value);
    free(upper);
    return 0;
}
