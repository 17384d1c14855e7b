/* cidr: address ranges (10.0.0.0/8, 2001:db8::/32, a bare address is its
 * own /32 or /128) and whether an address falls in one: the reverse proxies
 * an HTTP server believes X-Forwarded-For from (httpd_options.trusted_proxies,
 * api.trusted_proxies). IPv4 and IPv6 through inet_pton; an IPv4-mapped IPv6
 * address (::ffff:10.0.0.1) is the IPv4 address it maps. */
#ifndef VF_CIDR_H
#define VF_CIDR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cidr {
    int family;              /* AF_INET or AF_INET6 */
    unsigned char bytes[16]; /* the network, in network order (4 used for IPv4) */
    int prefix;              /* bits of bytes that must match */
} cidr;

/* Parse "ADDRESS" or "ADDRESS/PREFIX" (0..32 for IPv4, 0..128 for IPv6).
 * Returns 0, or -1 for anything else (a host name, a bad prefix, spaces). */
int cidr_parse(const char *text, cidr *out) __attribute__((warn_unused_result));

/* Whether the address `text` (no prefix, no brackets, no port) is in
 * `range`; false for text that is no address. */
bool cidr_contains(const cidr *range, const char *text);

/* Whether `text` is in any of the n ranges. */
bool cidr_any_contains(const cidr *ranges, int n, const char *text);

/* The client behind a request that came from `peer` (the connection's
 * address) with the X-Forwarded-For value `forwarded` (several headers
 * joined with ","; NULL: none), as reverse-proxy users expect: only when
 * `peer` is one of the trusted ranges is the header believed, and then the
 * client is the rightmost hop that is not trusted (each proxy appends the
 * address it was reached from; what is left of that hop anyone could have
 * written). Every hop trusted: the leftmost. A hop that is no address ends
 * the walk at the hop to its right (the peer when it is the last). Writes
 * the address into out[size]. */
void cidr_client_address(const cidr *trusted, int n, const char *peer, const char *forwarded,
                         char *out, size_t size);

#endif
