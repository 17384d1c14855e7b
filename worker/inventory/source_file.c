#include "source.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "host_json.h"
#include "yaml_json.h"

/* `rest` is what the streamed document left: its host list emptied. */
static hostset *finish(hostset *set, json_t *rest, vf_error *err)
{
    if (!rest || host_json_inventory_into(set, rest, err) < 0) {
        hostset_free(set);
        set = NULL;
    }
    json_decref(rest);
    return set;
}

/* The file read through a digest: what the parser is given is what is hashed. */
typedef struct hashed_file {
    FILE *file;
    EVP_MD_CTX *md;
} hashed_file;

static int read_hashed(void *context, unsigned char *buffer, size_t size, size_t *got)
{
    hashed_file *h = context;
    *got = fread(buffer, 1, size, h->file);
    if (*got < size && ferror(h->file))
        return -1;
    return *got == 0 || EVP_DigestUpdate(h->md, buffer, *got) == 1 ? 0 : -1;
}

static bool digest_final(EVP_MD_CTX *md, unsigned char out[SOURCE_DIGEST_SIZE])
{
    unsigned int n = 0;
    return EVP_DigestFinal_ex(md, out, &n) == 1 && n == SOURCE_DIGEST_SIZE;
}

/* The digest of the whole file into out: true, or false when it cannot be
 * read (the parse that follows then says why). */
static bool file_digest(FILE *file, EVP_MD_CTX *md, unsigned char out[SOURCE_DIGEST_SIZE])
{
    hashed_file h = {file, md};
    unsigned char buffer[65536];
    size_t got = 0;
    if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
        return false;
    do {
        if (read_hashed(&h, buffer, sizeof buffer, &got) < 0)
            return false;
    } while (got > 0);
    return digest_final(md, out);
}

hostset *source_file_fetch_since(const char *path, source_digest *seen, bool *unchanged,
                                 vf_error *err)
{
    *unchanged = false;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    hostset *set = md ? hostset_new() : NULL;
    if (!set) {
        EVP_MD_CTX_free(md);
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    FILE *file = fopen(path, "rb");
    if (!file) {
        int saved = errno;
        vf_error_set(err, VF_EIO, "%s: cannot open: %s", path, strerror(saved));
        goto fail;
    }
    /* Only a regular file is read twice (a pipe or a device is parsed as
     * it comes, every time). */
    struct stat st;
    bool regular = fstat(fileno(file), &st) == 0 && S_ISREG(st.st_mode);
    unsigned char now[SOURCE_DIGEST_SIZE];
    if (seen->known && regular && file_digest(file, md, now) &&
        memcmp(now, seen->bytes, SOURCE_DIGEST_SIZE) == 0) {
        *unchanged = true;
        fclose(file);
        goto fail;
    }
    /* Changed, or not known: parsed from the start, hashed as it is read. */
    if (regular && fseek(file, 0, SEEK_SET) != 0) {
        int saved = errno;
        fclose(file);
        vf_error_set(err, VF_EIO, "%s: cannot read: %s", path, strerror(saved));
        goto fail;
    }
    hashed_file h = {file, md};
    json_t *rest =
        EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1
            ? yaml_json_load_reader_each(read_hashed, &h, "nodes", host_json_add_each, set, err)
            : NULL;
    fclose(file);
    if (!rest) {
        if (!vf_error_is_set(err))
            vf_error_set(err, VF_EINTERNAL, "cannot hash the file");
        vf_error_prefix(err, "%s", path);
        goto fail;
    }
    set = finish(set, rest, err); /* frees set on failure */
    if (!set) {
        vf_error_prefix(err, "%s", path);
        EVP_MD_CTX_free(md);
        return NULL;
    }
    seen->known = digest_final(md, seen->bytes);
    EVP_MD_CTX_free(md);
    return set;
fail:
    hostset_free(set);
    EVP_MD_CTX_free(md);
    return NULL;
}

hostset *source_file_parse(const char *text, size_t len, vf_error *err)
{
    hostset *set = hostset_new();
    if (!set) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return NULL;
    }
    return finish(set, yaml_json_load_each(text, len, "nodes", host_json_add_each, set, err), err);
}

hostset *source_file_fetch(const char *path, vf_error *err)
{
    source_digest none = {.known = false};
    bool unchanged = false;
    return source_file_fetch_since(path, &none, &unchanged, err);
}
