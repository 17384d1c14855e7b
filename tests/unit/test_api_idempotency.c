/* api_idempotency: an Idempotency-Key's task id is keyed (api_idempotency.h):
 * the same inputs give the same id on any replica, another secret or another
 * key holder's key hash gives another, the ids under a rotation's earlier
 * secret are those that secret gave alone, and an unreadable secret file is
 * refused without quoting it. */
#include "api_idempotency.h"
#include "config.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static char *secret_path(const char *name, const char *content)
{
    static char paths[4][128];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, 128, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (content)
        fputs(content, f);
    fclose(f);
    chmod(path, 0600);
    return path;
}

static api_idempotency *with_files(vf_config *c, const char *const *files, size_t n, vf_error *err)
{
    c->api.idempotency_secret_files = (char **)files;
    c->api.n_idempotency_secret_files = n;
    api_idempotency *k = api_idempotency_new(c, err);
    c->api.idempotency_secret_files = NULL;
    c->api.n_idempotency_secret_files = 0;
    return k;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/vf-test-idem-%d", (int)getpid());
    mkdir(dir, 0700);
    vf_config *c = config_defaults();
    vf_error err;
    vf_error_init(&err);
    unsigned char alice[32], bob[32];
    memset(alice, 1, sizeof alice);
    memset(bob, 2, sizeof bob);
    char a[REQUEST_TASK_ID_LEN], b[REQUEST_TASK_ID_LEN], x[REQUEST_TASK_ID_LEN];

    /* No secret: the key's hash keys it; without keys the old derivation. */
    api_idempotency *none = with_files(c, NULL, 0, &err);
    CHECK(none && api_idempotency_count(none) == 1);
    api_idempotency_task_id(none, 0, "alice", alice, "order-1", a);
    api_idempotency_task_id(none, 0, "alice", alice, "order-1", b);
    CHECK_STR(a, b);
    CHECK(strncmp(a, "idem_", 5) == 0 && strlen(a) == 37);
    api_idempotency_task_id(none, 0, "alice", bob, "order-1", x);
    CHECK(strcmp(a, x) != 0); /* another key, even under the same name */
    api_idempotency_task_id(none, 0, "alice", NULL, "order-1", x);
    /* SHA-256("alice\norder-1"), the unkeyed id of no keys at all */
    CHECK_STR(x, "idem_bdca4c912de4262f56aedfc6f345f1f1");

    const char *s1[] = {secret_path("s1", "first-secret\n")};
    const char *s21[] = {secret_path("s2", "second-secret\n"), s1[0]};
    api_idempotency *one = with_files(c, s1, 1, &err);
    api_idempotency *two = with_files(c, s21, 2, &err);
    CHECKF(one && two, "%s", err.text);
    CHECK(api_idempotency_count(one) == 1 && api_idempotency_count(two) == 2);
    api_idempotency_task_id(one, 0, "alice", alice, "order-1", a);
    api_idempotency_task_id(one, 0, "alice", bob, "order-1", b);
    CHECK_STR(a, b); /* the server secret keys it, whoever's key */
    api_idempotency_task_id(two, 1, "alice", alice, "order-1", x);
    CHECK_STR(x, a); /* the earlier secret's id, as it gave it alone */
    api_idempotency_task_id(two, 0, "alice", alice, "order-1", x);
    CHECK(strcmp(x, a) != 0);
    api_idempotency_task_id(one, 0, "bob", alice, "order-1", x);
    CHECK(strcmp(x, a) != 0); /* another holder's name */

    const char *empty[] = {secret_path("empty", NULL)};
    vf_error_init(&err);
    CHECK(with_files(c, empty, 1, &err) == NULL && err.code == VF_EINVAL &&
          strstr(err.text, "empty"));
    const char *missing[] = {"/nonexistent/secret"};
    vf_error_init(&err);
    CHECK(with_files(c, missing, 1, &err) == NULL && err.code == VF_EIO);

    api_idempotency_free(none);
    api_idempotency_free(one);
    api_idempotency_free(two);
    api_idempotency_free(NULL);
    config_free(c);
    unlink(s1[0]);
    unlink(s21[0]);
    unlink(empty[0]);
    rmdir(dir);
    return test_summary();
}
