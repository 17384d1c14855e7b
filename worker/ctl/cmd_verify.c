/* virtflowctl verify: check a webhook's signature the way a receiver must
 * (docs/contracts.md "Webhooks"), e.g. to debug a receiver that rejects deliveries.
 * No configuration, broker or store is needed. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ctl.h"
#include "grow.h"
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
        "  --secret-file FILE  a file holding a whsec_ secret (repeat while rotating)\n"
        "  --secret-env VAR    an environment variable holding one\n"
        "  --id ID          the webhook-id header's value\n"
        "  --timestamp UNIX the webhook-timestamp header's value\n"
        "  --signature SIG  the webhook-signature header's value (v1,BASE64 ...)\n"
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
    size_t cap = 0, used = 0;
    char *buf = NULL;
    for (;;) {
        /* A body of BODY_MAX bytes or more is refused. */
        if (used >= BODY_MAX || grow_array((void **)&buf, &cap, used + 2, 1) < 0) {
            free(buf);
            return NULL;
        }
        /* One byte kept for the NUL. */
        size_t n = fread(buf + used, 1, cap - used - 1, f);
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

/* The keys of --secret-file and --secret-env, in the order given. */
typedef struct secrets {
    signature_key *keys; /* MAX_KEYS of them */
    size_t count;
} secrets;

static int add_secret(const ctl_option *option, const char *value)
{
    secrets *given = option->target;
    if (given->count == MAX_KEYS) {
        ctl_error("at most %d secrets", MAX_KEYS);
        return -1;
    }
    vf_error err;
    vf_error_init(&err);
    signature_key *key = &given->keys[given->count];
    if (strcmp(option->name, "secret-file") == 0) {
        if (signature_key_read_file(value, key, &err) < 0) {
            ctl_error("bad secret: %s", err.text);
            return -1;
        }
    } else {
        const char *text = getenv(value);
        if (!text || signature_key_parse(text, key, &err) < 0) {
            ctl_error("bad secret: %s: %s", value, text ? err.text : "not set");
            return -1;
        }
    }
    given->count++;
    return 0;
}

int ctl_verify(int argc, char **argv)
{
    static signature_key keys[MAX_KEYS];
    secrets given = {.keys = keys};
    static char id[HEADER_VALUE_MAX], ts[HEADER_VALUE_MAX], sig[HEADER_VALUE_MAX];
    const char *id_text = NULL, *ts_text = NULL, *sig_text = NULL, *now_text = NULL;
    const char *headers_path = NULL, *body_path = NULL;
    const ctl_option options[] = {
        {"secret-file", 0, CTL_OPTION_CALL, &given, NULL, add_secret, NULL, NULL},
        {"secret-env", 0, CTL_OPTION_CALL, &given, NULL, add_secret, NULL, NULL},
        {"id", 0, CTL_OPTION_STRING, &id_text, NULL, NULL, NULL, NULL},
        {"timestamp", 0, CTL_OPTION_STRING, &ts_text, NULL, NULL, NULL, NULL},
        {"signature", 0, CTL_OPTION_STRING, &sig_text, NULL, NULL, NULL, NULL},
        {"headers", 0, CTL_OPTION_PATH, &headers_path, NULL, NULL, NULL, NULL},
        {"body", 0, CTL_OPTION_PATH, &body_path, NULL, NULL, NULL, NULL},
        {"now", 0, CTL_OPTION_STRING, &now_text, NULL, NULL, NULL, NULL},
        {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL},
    };
    int64_t now = (int64_t)time(NULL);
    int rc = CTL_EXIT_USAGE;
    char *body = NULL;
    ctl_args args;
    int parsed = ctl_options_parse("verify", argc, argv, options, verify_usage, false, &args);
    if (parsed >= 0) {
        rc = parsed;
        goto out;
    }
    bool json = args.json;
    size_t n_keys = given.count;
    bool have_id = id_text != NULL, have_ts = ts_text != NULL, have_sig = sig_text != NULL;
    if (id_text)
        snprintf(id, sizeof id, "%s", id_text);
    if (ts_text)
        snprintf(ts, sizeof ts, "%s", ts_text);
    if (sig_text)
        snprintf(sig, sizeof sig, "%s", sig_text);
    if (now_text) {
        char *end = NULL;
        errno = 0;
        long long value = strtoll(now_text, &end, 10);
        if (errno || end == now_text || *end) {
            ctl_error("--now: expected Unix seconds, got '%s'", now_text);
            goto out;
        }
        now = value;
    }
    if (args.operand_count > 0) {
        ctl_error("unexpected argument '%s'", args.operands[0]);
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
