/* secret_file: one-line secrets read from files, trimmed, never quoted in
 * errors, with a warning when others can read the file. */
#include "secret_file.h"
#include "testlib.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define SECRET "s3cr3t-Val!ue=42"

static char dir[] = "/tmp/vf-test-secret-XXXXXX";

static void put(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    CHECK(chmod(path, mode) == 0);
}

/* Run secret_file_read with stderr captured into `log` (size bytes). */
static int read_logged(const char *path, char *buf, size_t size, vf_error *err, char *log,
                       size_t log_size)
{
    char log_path[256];
    snprintf(log_path, sizeof log_path, "%s/stderr.log", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    int rc = secret_file_read("test.secret_file", path, buf, size, err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = test_read_file(log_path, NULL);
    snprintf(log, log_size, "%s", text ? text : "");
    free(text);
    return rc;
}

static void test_reads_and_trims(void)
{
    char path[256], buf[SECRET_FILE_MAX], log[1024];
    vf_error err;
    snprintf(path, sizeof path, "%s/ok.secret", dir);
    put(path, "  " SECRET " \r\n\n", 0600);
    vf_error_init(&err);
    CHECK(read_logged(path, buf, sizeof buf, &err, log, sizeof log) == (int)strlen(SECRET));
    CHECK_STR(buf, SECRET);
    /* A private file is read silently. */
    CHECK_STR(log, "");
}

static void test_warns_when_others_can_read(void)
{
    char path[256], buf[SECRET_FILE_MAX], log[1024];
    vf_error err;
    snprintf(path, sizeof path, "%s/shared.secret", dir);
    put(path, SECRET "\n", 0644);
    vf_error_init(&err);
    CHECK(read_logged(path, buf, sizeof buf, &err, log, sizeof log) > 0);
    CHECK_STR(buf, SECRET);
    CHECK_CONTAINS(log, "warn");
    CHECK_CONTAINS(log, "test.secret_file");
    CHECK_CONTAINS(log, path);
    CHECK_CONTAINS(log, "other users can read");
    CHECK(strstr(log, SECRET) == NULL);

    /* Group access alone is the usual way to share a secret: no warning. */
    CHECK(chmod(path, 0640) == 0);
    CHECK(read_logged(path, buf, sizeof buf, &err, log, sizeof log) > 0);
    CHECK_STR(log, "");
}

static void test_refusals(void)
{
    char path[256], buf[64], log[1024];
    vf_error err;
    snprintf(path, sizeof path, "%s/bad.secret", dir);

    struct {
        const char *content;
        const char *error;
    } cases[] = {
        {"", "empty"},
        {" \n\t\n", "empty"},
        {SECRET "\nX-Injected: 1\n", "more than one line or control characters"},
        {"abc\001def", "more than one line or control characters"},
        /* 64-byte buffer: 63 characters fit, 64 do not. */
        {SECRET SECRET SECRET SECRET, "larger than 63 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        put(path, cases[i].content, 0600);
        vf_error_init(&err);
        memset(buf, 'x', sizeof buf);
        CHECK(read_logged(path, buf, sizeof buf, &err, log, sizeof log) == -1);
        CHECK(err.code == VF_EINVAL);
        CHECK_CONTAINS(err.text, path);
        CHECK_CONTAINS(err.text, cases[i].error);
        CHECK(strstr(err.text, SECRET) == NULL);
        /* Nothing of a refused secret is left in the caller's buffer. */
        CHECK(buf[0] == '\0' && buf[20] == '\0');
    }
    /* Exactly full is fine. */
    char exact[64];
    memset(exact, 'a', 63);
    exact[63] = '\0';
    put(path, exact, 0600);
    vf_error_init(&err);
    CHECK(read_logged(path, buf, sizeof buf, &err, log, sizeof log) == 63);

    vf_error_init(&err);
    CHECK(secret_file_read("x", "/nonexistent/vf.secret", buf, sizeof buf, &err) == -1);
    CHECK(err.code == VF_EIO);
    CHECK_CONTAINS(err.text, "/nonexistent/vf.secret: cannot open: No such file");
}

int main(void)
{
    vf_log_set_level(VF_LOG_INFO);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_reads_and_trims();
    test_warns_when_others_can_read();
    test_refusals();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary();
}
