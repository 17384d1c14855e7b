/* virtflow-api's keys file (api_keys): lines made by api_keys_new_key load
 * and match their key only, with their name and scopes (admin: all); every
 * malformed file is refused with its line number; the key never appears in
 * its line. The ring (the keys in force) takes a file's keys on reload and
 * keeps its own when the file no longer loads. */
#include "api_keys.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void refused(const char *text, const char *want)
{
    vf_error err;
    vf_error_init(&err);
    write_file(text);
    api_keys *keys = api_keys_load(path, &err);
    CHECKF(!keys && err.code == VF_ECONFIG && strstr(err.text, want), "%s -> %s", text, err.text);
    api_keys_free(keys);
}

/* The keys in force: key1 alone at first, key2 alone after a reload, and
 * still key2 after a reload of a file that is refused. */
static void ring(const char *line1, const char *key1, const char *line2, const char *key2)
{
    vf_error err;
    vf_error_init(&err);
    char text[512], header[160], name[API_KEY_NAME_SIZE];
    unsigned char digest[32];
    snprintf(text, sizeof text, "%s\n", line1);
    write_file(text);
    api_key_ring *keys = api_key_ring_load(path, &err);
    CHECKF(keys != NULL, "%s", err.text);
    CHECK(api_key_ring_count(keys) == 1 && api_key_ring_count(NULL) == 0);
    snprintf(header, sizeof header, "Bearer %s", key1);
    CHECK(api_key_ring_check(keys, header, name, digest) == (API_SCOPE_SUBMIT | API_SCOPE_READ));
    CHECK_STR(name, "ci");

    snprintf(text, sizeof text, "%s\n", line2);
    write_file(text);
    size_t was = 0;
    CHECKF(api_key_ring_reload(keys, &was, &err) == 0, "%s", err.text);
    CHECK(was == 1 && api_key_ring_count(keys) == 1);
    CHECK(api_key_ring_check(keys, header, name, digest) == 0);
    snprintf(header, sizeof header, "Bearer %s", key2);
    CHECK(api_key_ring_check(keys, header, name, digest) != 0);
    CHECK_STR(name, "root");

    write_file("# nothing\n");
    CHECK(api_key_ring_reload(keys, &was, &err) < 0 && err.code == VF_ECONFIG);
    CHECK(api_key_ring_check(keys, header, name, digest) != 0);
    api_key_ring_free(keys);
    api_key_ring_free(NULL);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/vf-test-api-keys-%d", (int)getpid());
    vf_error err;
    vf_error_init(&err);
    char key1[128], line1[256], key2[128], line2[256];
    CHECK(api_keys_new_key("ci", "submit,read", key1, sizeof key1, line1, sizeof line1, &err) == 0);
    CHECK(api_keys_new_key("root", "admin", key2, sizeof key2, line2, sizeof line2, &err) == 0);
    CHECK(strncmp(key1, "vfk_", 4) == 0 && strlen(key1) == 68 && strcmp(key1, key2) != 0);
    CHECK(!strstr(line1, key1 + 4) && strncmp(line1, "sha256:", 7) == 0);
    CHECK(api_keys_new_key("a b", "read", key1 + 100, 20, line1 + 200, 20, &err) < 0);
    CHECK(api_keys_new_key("ok", "read,write", key2 + 100, 20, line2 + 200, 20, &err) < 0);

    char text[1024];
    snprintf(text, sizeof text, "# keys\n\n  %s\n%s\n", line1, line2);
    write_file(text);
    api_keys *keys = api_keys_load(path, &err);
    CHECKF(keys != NULL, "%s", err.text);
    CHECK(api_keys_count(keys) == 2);
    char name[API_KEY_NAME_SIZE], header[160];
    snprintf(header, sizeof header, "Bearer %s", key1);
    CHECK(api_keys_check(keys, header, name) == (API_SCOPE_SUBMIT | API_SCOPE_READ));
    CHECK_STR(name, "ci");
    snprintf(header, sizeof header, "bearer  %s ", key2);
    CHECK(api_keys_check(keys, header, name) ==
          (API_SCOPE_SUBMIT | API_SCOPE_READ | API_SCOPE_RELEASE | API_SCOPE_ADMIN));
    CHECK_STR(name, "root");
    snprintf(header, sizeof header, "Bearer %.67s", key1); /* one character short */
    CHECK(api_keys_check(keys, header, name) == 0 && name[0] == '\0');
    snprintf(header, sizeof header, "Basic %s", key1);
    CHECK(api_keys_check(keys, header, name) == 0);
    CHECK(api_keys_check(keys, NULL, name) == 0);
    CHECK(api_keys_check(keys, "Bearer ", name) == 0);
    CHECK(api_keys_check(NULL, "Bearer x", name) == 0);
    api_keys_free(keys);
    api_keys_free(NULL);

    ring(line1, key1, line2, key2);
    refused("# only comments\n", "no keys");
    refused("sha256:12 ci read\n", ":1: the hash");
    snprintf(text, sizeof text, "%s\n%.71s x read\n", line1, line1);
    refused(text, ":2: the same key twice");
    snprintf(text, sizeof text, "%s\n%s\n", line1, line1);
    refused(text, ":2: the same key twice");
    char other[256];
    snprintf(other, sizeof other, "%.71s", line2);
    snprintf(text, sizeof text, "%s\n%s ci read\n", line1, other);
    refused(text, ":2: the same name twice");
    snprintf(text, sizeof text, "%s nobody write\n", other);
    refused(text, ":1: scopes");
    snprintf(text, sizeof text, "%s bad/name read\n", other);
    refused(text, ":1: the name");
    snprintf(text, sizeof text, "%s someone read extra\n", other);
    refused(text, ":1: expected");
    CHECK(api_keys_parse_scopes("read,release") == (API_SCOPE_READ | API_SCOPE_RELEASE));
    CHECK(api_keys_parse_scopes("") < 0 && api_keys_parse_scopes("read,") == API_SCOPE_READ);
    CHECK(api_keys_parse_scopes("reader") < 0);

    unlink(path);
    vf_error_init(&err);
    CHECK(!api_keys_load(path, &err) && err.code == VF_EIO);
    return test_summary();
}
