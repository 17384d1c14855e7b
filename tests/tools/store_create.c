/* store_create: create (or migrate) an SQLite store as the worker does, so a
 * test can fill it with rows of its own without running a worker.
 *
 *   store_create PATH
 *
 * Exit 0 when the store is there with the current schema, 1 otherwise (why
 * on stderr). tests/integration/test_ctl_prune uses it. */
#include <stdio.h>

#include "store.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: store_create PATH\n");
        return 2;
    }
    vf_error err;
    vf_error_init(&err);
    store *s = store_open(argv[1], STORE_READ_WRITE, &err);
    if (!s) {
        fprintf(stderr, "store_create: %s\n", err.text);
        return 1;
    }
    store_close(s);
    return 0;
}
