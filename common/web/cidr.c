/* cidr: see cidr.h. */
#include "cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The address in text as bytes and family; an IPv4-mapped IPv6 address
 * becomes its IPv4 address. */
static bool address_of(const char *text, int *family, unsigned char bytes[16])
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (inet_pton(AF_INET, text, bytes) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, text, bytes) != 1)
        return false;
    if (memcmp(bytes, mapped, sizeof mapped) == 0) {
        memmove(bytes, bytes + 12, 4);
        *family = AF_INET;
        return true;
    }
    *family = AF_INET6;
    return true;
}

int cidr_parse(const char *text, cidr *out)
{
    char address[64];
    const char *slash = strchr(text, '/');
    size_t len = slash ? (size_t)(slash - text) : strlen(text);
    if (len == 0 || len >= sizeof address)
        return -1;
    memcpy(address, text, len);
    address[len] = '\0';
    memset(out, 0, sizeof *out);
    if (!address_of(address, &out->family, out->bytes))
        return -1;
    int bits = out->family == AF_INET ? 32 : 128;
    out->prefix = bits;
    if (slash) {
        char *end = NULL;
        errno = 0;
        long prefix = strtol(slash + 1, &end, 10);
        if (errno || end == slash + 1 || *end || slash[1] < '0' || slash[1] > '9' || prefix < 0 ||
            prefix > bits)
            return -1;
        out->prefix = (int)prefix;
    }
    return 0;
}

bool cidr_contains(const cidr *range, const char *text)
{
    int family;
    unsigned char bytes[16];
    if (!text || !address_of(text, &family, bytes) || family != range->family)
        return false;
    int whole = range->prefix / 8, rest = range->prefix % 8;
    if (memcmp(bytes, range->bytes, (size_t)whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (bytes[whole] & mask) == (range->bytes[whole] & mask);
}

bool cidr_any_contains(const cidr *ranges, int n, const char *text)
{
    for (int i = 0; i < n; i++)
        if (cidr_contains(&ranges[i], text))
            return true;
    return false;
}

/* The hop of `list` ending just before `end` (exclusive), trimmed, into
 * hop[size]; returns where it starts (its comma, or `list`). */
static const char *hop_before(const char *list, const char *end, char *hop, size_t size)
{
    const char *start = end;
    while (start > list && start[-1] != ',')
        start--;
    const char *a = start, *b = end;
    while (a < b && (*a == ' ' || *a == '\t'))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
        b--;
    size_t len = (size_t)(b - a) < size ? (size_t)(b - a) : size - 1;
    memcpy(hop, a, len);
    hop[len] = '\0';
    return start;
}

void cidr_client_address(const cidr *trusted, int n, const char *peer, const char *forwarded,
                         char *out, size_t size)
{
    snprintf(out, size, "%s", peer);
    if (!forwarded || !cidr_any_contains(trusted, n, peer))
        return;
    const char *end = forwarded + strlen(forwarded);
    while (end > forwarded) {
        char hop[64];
        const char *start = hop_before(forwarded, end, hop, sizeof hop);
        int family;
        unsigned char bytes[16];
        if (!address_of(hop, &family, bytes))
            return; /* not an address: the hop to its right stands */
        snprintf(out, size, "%s", hop);
        if (!cidr_any_contains(trusted, n, hop))
            return;
        end = start > forwarded ? start - 1 : forwarded;
    }
}
