#include "secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int secret_file_read(const char *what, const char *path, char *buf, size_t size, vf_error *err)
{
    int rc = -1;
    size_t len = 0;
    int fd = -1;
    if (size < 2) {
        vf_error_set(err, VF_EINTERNAL, "%s: no room for a secret", path);
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "%s: cannot open: %s", path, strerror(saved));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & (S_IROTH | S_IWOTH)))
        log_warn("%s %s: other users can %s this secret file (mode %04o); chmod o-rwx it", what,
                 path, (st.st_mode & S_IROTH) ? "read" : "write", (unsigned)(st.st_mode & 07777));
    /* Read one byte more than fits, to tell "too large" from "exactly full". */
    for (;;) {
        if (len + 1 >= size) {
            char extra;
            ssize_t more = read(fd, &extra, 1);
            if (more > 0) {
                vf_error_set(err, VF_EINVAL, "%s: larger than %zu bytes", path, size - 1);
                goto out;
            }
            break;
        }
        ssize_t got = read(fd, buf + len, size - 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            vf_error_set(err, VF_EIO, "%s: cannot read", path);
            goto out;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    size_t start = 0;
    while (start < len && is_space(buf[start]))
        start++;
    while (len > start && is_space(buf[len - 1]))
        len--;
    memmove(buf, buf + start, len - start);
    len -= start;
    buf[len] = '\0';
    if (len == 0) {
        vf_error_set(err, VF_EINVAL, "%s: empty", path);
        goto out;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) {
            vf_error_set(err, VF_EINVAL, "%s: more than one line or control characters", path);
            goto out;
        }
    }
    rc = (int)len;
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0 && size > 0)
        explicit_bzero(buf, size);
    return rc;
}
