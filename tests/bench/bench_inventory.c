/* bench_inventory: the resident memory an inventory refresh needs, by way of
 * reading, at 100,000 hosts (the shape bench_worker.py writes: ~13 MB of
 * JSON). Each case runs in a child process of its own so that one case's
 * peak is not another's; the child makes the text, notes its RSS, reads the
 * inventory once, and reports its peak RSS (VmHWM) and what it holds after
 * (the hostset, the body, and what malloc_trim leaves).
 *
 *   streamed: what the worker does (source_file_fetch; source_http_parse on a
 *             body in memory): one host at a time becomes a compact `host`.
 *   one tree: the whole document parsed first, then converted (the worker
 *             before it streamed), for comparison in the same run.
 *
 * In the worker the peak of a refresh is the snapshot in use (RSS between
 * refreshes, ~96 MiB at 100,000 hosts with the engine's index) plus the
 * "during" column below. Prints; asserts nothing.
 *
 *   bench_inventory [hosts]   (default 100000) */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_json.h"
#include "hostset.h"
#include "source.h"
#include "yaml_json.h"
#include "benchlib.h"

typedef enum { FILE_STREAMED, FILE_TREE, HTTP_STREAMED, HTTP_TREE } read_way;

static const char *const way_names[] = {"file, streamed", "file, one tree", "http body, streamed",
                                        "http body, one tree"};

/* VmRSS or VmHWM of this process, KiB. */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && line[len] == ':')
            kib = atol(line + len + 1);
    fclose(f);
    return kib;
}

/* The document bench_worker.py's vftest.write_inventory makes. */
static char *make_text(size_t n_hosts, size_t *len)
{
    size_t size = n_hosts * 160 + 16, used = 0;
    char *text = malloc(size);
    if (!text)
        return NULL;
    used += (size_t)snprintf(text, size, "[");
    for (size_t i = 0; i < n_hosts; i++)
        used += (size_t)snprintf(text + used, size - used,
                                 "%s{\"name\": \"bm-%03zu\", \"ip\": \"10.9.0.%zu\", \"pool\": "
                                 "\"default\", \"cpu\": 64, \"memory\": 262144, \"storage\": "
                                 "10000, \"max_vms\": 1000}",
                                 i ? ", " : "", i, i + 1);
    used += (size_t)snprintf(text + used, size - used, "]");
    *len = used;
    return text;
}

static hostset *read_once(read_way way, const char *path, const char *text, size_t len,
                          vf_error *err)
{
    switch (way) {
    case FILE_STREAMED:
        return source_file_fetch(path, err);
    case HTTP_STREAMED: {
        json_error_t syntax;
        return source_http_parse(text, len, &syntax, err);
    }
    case FILE_TREE:
    case HTTP_TREE: {
        json_error_t syntax;
        json_t *root =
            way == FILE_TREE ? yaml_json_load_file(path, err) : json_loadb(text, len, 0, &syntax);
        if (!root) {
            vf_error_set(err, VF_EINVAL, "not parsed");
            return NULL;
        }
        hostset *set = host_json_inventory(root, err);
        json_decref(root);
        return set;
    }
    }
    return NULL;
}

static int child(read_way way, size_t n_hosts, const char *path)
{
    size_t len = 0;
    char *text = NULL;
    if (way == HTTP_STREAMED || way == HTTP_TREE) {
        text = make_text(n_hosts, &len); /* the body http_get holds */
        if (!text)
            return 1;
    }
    long before = status_kib("VmRSS");
    double t0 = bench_now_s();
    vf_error err;
    vf_error_init(&err);
    hostset *set = read_once(way, path, text, len, &err);
    double elapsed = bench_now_s() - t0;
    if (!set) {
        fprintf(stderr, "%s: %s\n", way_names[way], err.text);
        fflush(stderr);
        return 1;
    }
    long peak = status_kib("VmHWM");
    malloc_trim(0); /* as the worker's refresh thread does after each refresh */
    long after = status_kib("VmRSS");
    printf("%-20s %zu hosts: RSS before %6.1f MiB, peak %6.1f MiB (during: +%6.1f MiB), "
           "after %6.1f MiB, %.2f s\n",
           way_names[way], set->n_hosts, before / 1024.0, peak / 1024.0, (peak - before) / 1024.0,
           after / 1024.0, elapsed);
    fflush(stdout); /* the child ends with _exit */
    hostset_free(set);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n_hosts = argc > 1 ? (size_t)atol(argv[1]) : 100000;
    char path[] = "/tmp/vf-bench-inventory-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    size_t len = 0;
    char *text = make_text(n_hosts, &len);
    if (!text || write(fd, text, len) != (ssize_t)len) {
        fprintf(stderr, "cannot write %s\n", path);
        close(fd);
        remove(path);
        return 1;
    }
    close(fd);
    free(text);
    printf("inventory: %zu hosts, %.1f MB of JSON\n", n_hosts, (double)len / 1e6);
    fflush(stdout);

    int failed = 0;
    for (read_way way = FILE_STREAMED; way <= HTTP_TREE; way++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(child(way, n_hosts, path));
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            failed = 1;
    }
    remove(path);
    return failed;
}
