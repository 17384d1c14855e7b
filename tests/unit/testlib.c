#include "testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int test_passed;
int test_failed;

void test_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...)
{
    if (ok) {
        test_passed++;
        return;
    }
    test_failed++;
    fprintf(stderr, "FAIL %s:%d: %s", file, line, expr);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(" -- ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}

void test_check_str(const char *got, const char *want, const char *file, int line, const char *expr)
{
    bool ok = got && want && strcmp(got, want) == 0;
    test_check(ok, file, line, expr, "got \"%s\", want \"%s\"", got ? got : "(null)",
               want ? want : "(null)");
}

void test_check_contains(const char *haystack, const char *needle, const char *file, int line,
                         const char *expr)
{
    bool ok = haystack && needle && strstr(haystack, needle) != NULL;
    test_check(ok, file, line, expr, "\"%s\" lacks \"%s\"", haystack ? haystack : "(null)",
               needle ? needle : "(null)");
}

int test_summary(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (cap - n - 1 == 0) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int test_connect_loopback(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void test_http_exchange(int port, const char *request, char *out, size_t size)
{
    out[0] = '\0';
    int fd = test_connect_loopback(port);
    if (fd < 0)
        return;
    size_t used = 0;
    if (send(fd, request, strlen(request), MSG_NOSIGNAL) == (ssize_t)strlen(request)) {
        ssize_t n;
        while (used + 1 < size && (n = recv(fd, out + used, size - used - 1, 0)) > 0)
            used += (size_t)n;
    }
    out[used] = '\0';
    close(fd);
}
