/* virtflowctl verify: check a webhook's signature the way a receiver must
 * (DESIGN.md "Webhooks"), e.g. to debug a receiver that rejects deliveries.
 * No configuration, broker or store is needed. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ctl.h"
#include "signature.h"

#define MAX_KEYS 8
#define BODY_MAX ((size_t)16 * 1024 * 1024)
#define HEADER_VALUE_MAX 2048

static void verify_usage(FILE *out)
{
    fprintf(
        out,
        "usage: virtflowctl verify (--secret-file FILE | --secret-env VAR)...\n"
        "                          (--id ID --timestamp UNIX --signature SIG | --headers FILE)\n"
        "                          [--body FILE] [--now UNIX] [--json]\n"
        "\n"
        "Verify a Standard Webhooks signature: HMAC-SHA256 of \"<id>.<timestamp>.<body>\"\n"
        "with the whsec_ secret, against every v1 entry of webhook-signature, and a\n"
        "timestamp within 5 minutes of now. Give several secrets while rotating.\n"
        "\n"
        "  --headers FILE   raw HTTP headers (a request line, if any, is skipped);\n"
        "                   webhook-id, webhook-timestamp and webhook-signature are read\n"
        "  --body FILE      the body exactly as received; default or '-': stdin\n"
        "  --now UNIX       the current time to judge the timestamp against (tests)\n"
        "  --json           print {\"valid\": true} or {\"valid\": false, \"reason\": ...}\n"
        "\n"
        "exit status: 0 valid, 1 invalid (the reason is printed: bad signature, stale\n"
        "timestamp, malformed header), 2 usage or a bad secret.\n");
}

static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return NULL;
    for (;;) {
        if (used == cap) {
            if (cap >= BODY_MAX) {
                free(buf);
                return NULL;
            }
            cap *= 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) {
                free(buf);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + used, 1, cap - used, f);
        used += n;
        if (n == 0)
            break;
    }
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* Fill id/timestamp/signature from a raw header block. Returns 0 or -1. */
static int read_headers(const char *path, char *id, char *ts, char *sig)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int saved = errno;
        ctl_error("%s: %s", path, strerror(saved));
        return -1;
    }
    char line[HEADER_VALUE_MAX + 64];
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        if (len == 0)
            break; /* end of the header block */
        char *colon = strchr(line, ':');
        if (!colon)
            continue; /* request or status line */
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        size_t vlen = strlen(value);
        while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
            value[--vlen] = '\0';
        char *target = strcasecmp(line, "webhook-id") == 0          ? id
                       : strcasecmp(line, "webhook-timestamp") == 0 ? ts
                       : strcasecmp(line, "webhook-signature") == 0 ? sig
                                                                    : NULL;
        if (target)
            snprintf(target, HEADER_VALUE_MAX, "%s", value);
    }
    fclose(f);
    return 0;
}

int ctl_verify(int argc, char **argv)
{
    enum {
        OPT_SECRET_FILE = 256,
        OPT_SECRET_ENV,
        OPT_ID,
        OPT_TIMESTAMP,
        OPT_SIGNATURE,
        OPT_HEADERS,
        OPT_BODY,
        OPT_NOW,
        OPT_JSON
    };
    static const struct option longopts[] = {
        {"secret-file", required_argument, NULL, OPT_SECRET_FILE},
        {"secret-env", required_argument, NULL, OPT_SECRET_ENV},
        {"id", required_argument, NULL, OPT_ID},
        {"timestamp", required_argument, NULL, OPT_TIMESTAMP},
        {"signature", required_argument, NULL, OPT_SIGNATURE},
        {"headers", required_argument, NULL, OPT_HEADERS},
        {"body", required_argument, NULL, OPT_BODY},
        {"now", required_argument, NULL, OPT_NOW},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static signature_key keys[MAX_KEYS];
    size_t n_keys = 0;
    static char id[HEADER_VALUE_MAX], ts[HEADER_VALUE_MAX], sig[HEADER_VALUE_MAX];
    bool have_id = false, have_ts = false, have_sig = false;
    const char *headers_path = NULL, *body_path = NULL;
    int64_t now = (int64_t)time(NULL);
    bool json = false;
    int rc = CTL_EXIT_USAGE;
    char *body = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        vf_error err;
        vf_error_init(&err);
        switch (c) {
        case OPT_SECRET_FILE:
        case OPT_SECRET_ENV:
            if (n_keys == MAX_KEYS) {
                ctl_error("at most %d secrets", MAX_KEYS);
                goto out;
            }
            if (c == OPT_SECRET_FILE) {
                if (signature_key_read_file(optarg, &keys[n_keys], &err) < 0) {
                    ctl_error("bad secret: %s", err.text);
                    goto out;
                }
            } else {
                const char *value = getenv(optarg);
                if (!value || signature_key_parse(value, &keys[n_keys], &err) < 0) {
                    ctl_error("bad secret: %s: %s", optarg, value ? err.text : "not set");
                    goto out;
                }
            }
            n_keys++;
            break;
        case OPT_ID:
            snprintf(id, sizeof id, "%s", optarg);
            have_id = true;
            break;
        case OPT_TIMESTAMP:
            snprintf(ts, sizeof ts, "%s", optarg);
            have_ts = true;
            break;
        case OPT_SIGNATURE:
            snprintf(sig, sizeof sig, "%s", optarg);
            have_sig = true;
            break;
        case OPT_HEADERS:
            headers_path = optarg;
            break;
        case OPT_BODY:
            body_path = optarg;
            break;
        case OPT_NOW: {
            char *end = NULL;
            errno = 0;
            long long value = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end) {
                ctl_error("--now: expected Unix seconds, got '%s'", optarg);
                goto out;
            }
            now = value;
            break;
        }
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            verify_usage(stdout);
            rc = CTL_EXIT_OK;
            goto out;
        default:
            verify_usage(stderr);
            goto out;
        }
    }
    if (optind < argc) {
        ctl_error("unexpected argument '%s'", argv[optind]);
        goto out;
    }
    if (n_keys == 0) {
        ctl_error("give the secret with --secret-file FILE or --secret-env VAR");
        goto out;
    }
    if (headers_path && read_headers(headers_path, id, ts, sig) < 0)
        goto out;
    if (!headers_path && !(have_id && have_ts && have_sig)) {
        ctl_error("give --id, --timestamp and --signature, or --headers FILE");
        goto out;
    }
    FILE *in = stdin;
    if (body_path && strcmp(body_path, "-") != 0) {
        in = fopen(body_path, "rb");
        if (!in) {
            int saved = errno;
            ctl_error("%s: %s", body_path, strerror(saved));
            goto out;
        }
    }
    size_t body_len = 0;
    body = read_all(in, &body_len);
    if (in != stdin)
        fclose(in);
    if (!body) {
        ctl_error("cannot read the body (larger than %zu bytes?)", BODY_MAX);
        goto out;
    }
    signature_result result =
        signature_verify(keys, n_keys, id, ts, sig, body, body_len, now, SIGNATURE_TOLERANCE_S);
    bool valid = result == SIGNATURE_VALID;
    if (json) {
        json_t *answer =
            valid ? json_pack("{s:b}", "valid", 1)
                  : json_pack("{s:b, s:s}", "valid", 0, "reason", signature_result_text(result));
        ctl_print_json(answer);
        json_decref(answer);
    } else if (valid) {
        printf("valid\n");
    } else {
        printf("invalid: %s\n", signature_result_text(result));
    }
    rc = valid ? CTL_EXIT_OK : CTL_EXIT_NEGATIVE;
out:
    free(body);
    memset(keys, 0, sizeof keys);
    return rc;
}
