/* cidr: ranges parsed as an operator writes them, addresses tested against
 * them (IPv4, IPv6, IPv4-mapped), and the client behind a chain of proxies
 * as reverse-proxy users expect: the rightmost hop that is not trusted. */
#include "cidr.h"
#include "testlib.h"

#include <sys/socket.h>

static const char *client(const cidr *trusted, int n, const char *peer, const char *forwarded)
{
    static char out[64];
    cidr_client_address(trusted, n, peer, forwarded, out, sizeof out);
    return out;
}

int main(void)
{
    cidr r;
    CHECK(cidr_parse("10.0.0.0/8", &r) == 0 && r.family == AF_INET && r.prefix == 8);
    CHECK(cidr_contains(&r, "10.200.3.4") && !cidr_contains(&r, "11.0.0.1"));
    CHECK(cidr_contains(&r, "::ffff:10.1.1.1")); /* an IPv4-mapped peer */
    CHECK(!cidr_contains(&r, "not an address") && !cidr_contains(&r, NULL));
    CHECK(cidr_parse("192.168.1.7", &r) == 0 && r.prefix == 32);
    CHECK(cidr_contains(&r, "192.168.1.7") && !cidr_contains(&r, "192.168.1.8"));
    CHECK(cidr_parse("10.1.2.3/23", &r) == 0 && cidr_contains(&r, "10.1.3.255") &&
          !cidr_contains(&r, "10.1.4.0"));
    CHECK(cidr_parse("2001:db8::/32", &r) == 0 && r.family == AF_INET6);
    CHECK(cidr_contains(&r, "2001:db8:1::9") && !cidr_contains(&r, "2001:db9::1"));
    CHECK(!cidr_contains(&r, "10.0.0.1"));
    CHECK(cidr_parse("0.0.0.0/0", &r) == 0 && cidr_contains(&r, "8.8.8.8"));
    static const char *const bad[] = {"",          "proxy.example", "10.0.0.0/33",
                                      "10.0.0.0/", "10.0.0.0/-1",   "::1/129",
                                      " 10.0.0.1", "10.0.0.0/8x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECKF(cidr_parse(bad[i], &r) < 0, "'%s' parsed", bad[i]);

    cidr trusted[2];
    CHECK(cidr_parse("127.0.0.1", &trusted[0]) == 0 && cidr_parse("10.0.0.0/8", &trusted[1]) == 0);
    /* From a trusted proxy: the rightmost untrusted hop; what is left of it
     * anyone could have written. */
    CHECK_STR(client(trusted, 2, "127.0.0.1", "6.6.6.6, 203.0.113.7, 10.0.0.2"), "203.0.113.7");
    CHECK_STR(client(trusted, 2, "127.0.0.1", "203.0.113.7"), "203.0.113.7");
    CHECK_STR(client(trusted, 2, "127.0.0.1", " 2001:db8::7 ,10.0.0.2"), "2001:db8::7");
    /* Every hop trusted: the leftmost. None: the peer. */
    CHECK_STR(client(trusted, 2, "127.0.0.1", "10.0.0.9, 10.0.0.2"), "10.0.0.9");
    CHECK_STR(client(trusted, 2, "127.0.0.1", NULL), "127.0.0.1");
    /* A hop that is no address ends the walk at the hop to its right. */
    CHECK_STR(client(trusted, 2, "127.0.0.1", "203.0.113.7, junk, 10.0.0.2"), "10.0.0.2");
    CHECK_STR(client(trusted, 2, "127.0.0.1", "junk"), "127.0.0.1");
    CHECK_STR(client(trusted, 2, "127.0.0.1", ",,"), "127.0.0.1");
    /* From anyone else the header is not believed. */
    CHECK_STR(client(trusted, 2, "198.51.100.1", "203.0.113.7"), "198.51.100.1");
    CHECK_STR(client(NULL, 0, "198.51.100.1", "203.0.113.7"), "198.51.100.1");
    return test_summary();
}
