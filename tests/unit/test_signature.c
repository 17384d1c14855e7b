/* signature: the Standard Webhooks test vector, rotation, tampering, stale
 * timestamps, malformed headers and bad secrets. */
#include "signature.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPEC_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SPEC_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SPEC_TS 1614265330
#define SPEC_BODY "{\"test\": 2432232314}"
#define SPEC_SIG "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define OTHER_SECRET "whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24="

static signature_key key_of(const char *secret)
{
    signature_key key;
    vf_error err;
    vf_error_init(&err);
    int rc = signature_key_parse(secret, &key, &err);
    CHECKF(rc == 0, "%s: %s", secret, err.text);
    return key;
}

static signature_result verify(const signature_key *keys, size_t n, const char *ts,
                               const char *header, const char *body, int64_t now)
{
    return signature_verify(keys, n, SPEC_ID, ts, header, body, strlen(body), now,
                            SIGNATURE_TOLERANCE_S);
}

static void test_spec_vector(void)
{
    signature_key key = key_of(SPEC_SECRET);
    CHECK(key.len == 24);
    char sig[SIGNATURE_SIZE];
    CHECK(signature_sign(&key, SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), sig, NULL) == 0);
    CHECK_STR(sig, SPEC_SIG);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS) == SIGNATURE_VALID);
    /* Within the 5-minute tolerance either way. */
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS + 300) == SIGNATURE_VALID);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS - 300) == SIGNATURE_VALID);
    /* A secret file with a trailing newline reads the same. */
    CHECK(signature_key_parse("  " SPEC_SECRET "\n", &key, NULL) == 0 && key.len == 24);
}

static void test_rotation(void)
{
    signature_key keys[2] = {key_of(SPEC_SECRET), key_of(OTHER_SECRET)};
    char header[256];
    CHECK(signature_header(keys, 2, SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), header,
                           sizeof header, NULL) == 0);
    CHECK(strncmp(header, SPEC_SIG " v1,", strlen(SPEC_SIG) + 4) == 0);
    /* A receiver that holds only one of the two keys accepts it. */
    CHECK(verify(&keys[0], 1, "1614265330", header, SPEC_BODY, SPEC_TS) == SIGNATURE_VALID);
    CHECK(verify(&keys[1], 1, "1614265330", header, SPEC_BODY, SPEC_TS) == SIGNATURE_VALID);
    /* Signed with the new key only: the old key alone rejects it. */
    char only_new[SIGNATURE_SIZE];
    CHECK(signature_sign(&keys[1], SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), only_new,
                         NULL) == 0);
    CHECK(verify(&keys[0], 1, "1614265330", only_new, SPEC_BODY, SPEC_TS) ==
          SIGNATURE_BAD_SIGNATURE);
    CHECK(verify(keys, 2, "1614265330", only_new, SPEC_BODY, SPEC_TS) == SIGNATURE_VALID);
    /* Unknown versions next to v1 are ignored. */
    CHECK(verify(keys, 1, "1614265330", "v1a,abc " SPEC_SIG, SPEC_BODY, SPEC_TS) ==
          SIGNATURE_VALID);
    /* Too small a buffer is an error, not a truncated header. */
    CHECK(signature_header(keys, 2, SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), header, 60,
                           NULL) == -1);
    CHECK(signature_header(keys, 0, SPEC_ID, SPEC_TS, SPEC_BODY, strlen(SPEC_BODY), header,
                           sizeof header, NULL) == -1);
}

static void test_tampering(void)
{
    signature_key key = key_of(SPEC_SECRET);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, "{\"test\": 2432232315}", SPEC_TS) ==
          SIGNATURE_BAD_SIGNATURE);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, "{\"test\":2432232314}", SPEC_TS) ==
          SIGNATURE_BAD_SIGNATURE);
    /* Another timestamp inside the tolerance still fails: it is signed. */
    CHECK(verify(&key, 1, "1614265331", SPEC_SIG, SPEC_BODY, SPEC_TS) == SIGNATURE_BAD_SIGNATURE);
    CHECK(signature_verify(&key, 1, "msg_other", "1614265330", SPEC_SIG, SPEC_BODY,
                           strlen(SPEC_BODY), SPEC_TS,
                           SIGNATURE_TOLERANCE_S) == SIGNATURE_BAD_SIGNATURE);
    signature_key other = key_of(OTHER_SECRET);
    CHECK(verify(&other, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS) == SIGNATURE_BAD_SIGNATURE);
    /* One flipped bit of the MAC. */
    CHECK(verify(&key, 1, "1614265330", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=",
                 SPEC_BODY, SPEC_TS) == SIGNATURE_BAD_SIGNATURE);
}

static void test_stale(void)
{
    signature_key key = key_of(SPEC_SECRET);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS + 301) ==
          SIGNATURE_STALE_TIMESTAMP);
    CHECK(verify(&key, 1, "1614265330", SPEC_SIG, SPEC_BODY, SPEC_TS - 301) ==
          SIGNATURE_STALE_TIMESTAMP);
    CHECK_STR(signature_result_text(SIGNATURE_STALE_TIMESTAMP), "stale timestamp");
}

static void test_malformed(void)
{
    signature_key key = key_of(SPEC_SECRET);
    const char *bad_headers[] = {
        "",
        "   ",
        "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",    /* no version */
        "v1,",                                             /* no value */
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE",  /* cut short */
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1O!=", /* not base64 */
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= ,x",
    };
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++)
        CHECKF(verify(&key, 1, "1614265330", bad_headers[i], SPEC_BODY, SPEC_TS) ==
                   SIGNATURE_MALFORMED,
               "header \"%s\"", bad_headers[i]);
    const char *bad_timestamps[] = {"",    "-1614265330",         "1614265330.5", " 1614265330",
                                    "abc", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_timestamps / sizeof bad_timestamps[0]; i++)
        CHECKF(verify(&key, 1, bad_timestamps[i], SPEC_SIG, SPEC_BODY, SPEC_TS) ==
                   SIGNATURE_MALFORMED,
               "timestamp \"%s\"", bad_timestamps[i]);
    CHECK(signature_verify(&key, 1, "", "1614265330", SPEC_SIG, SPEC_BODY, strlen(SPEC_BODY),
                           SPEC_TS, SIGNATURE_TOLERANCE_S) == SIGNATURE_MALFORMED);
    CHECK(verify(&key, 1, "1614265330", NULL, SPEC_BODY, SPEC_TS) == SIGNATURE_MALFORMED);
}

static void test_bad_secrets(void)
{
    const char *bad[] = {
        "",
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",        /* no prefix */
        "whsec_",                                  /* nothing after it */
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",  /* not base64 */
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", /* wrong padding */
        "whsec_M",                                 /* impossible length */
        "whsec_MfKQ 9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        signature_key key;
        vf_error err;
        vf_error_init(&err);
        CHECKF(signature_key_parse(bad[i], &key, &err) == -1, "secret \"%s\"", bad[i]);
        CHECK(err.code == VF_EINVAL);
        /* The error never repeats the secret. */
        CHECKF(strlen(bad[i]) < 8 || !strstr(err.text, bad[i] + 6), "%s", err.text);
    }
    /* Unpadded and padded forms of the same key agree. */
    signature_key a = key_of("whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24=");
    signature_key b = key_of("whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24");
    CHECK(a.len == b.len && a.len == 26 && memcmp(a.bytes, b.bytes, a.len) == 0);
    CHECK(memcmp(a.bytes, "second-secret-for-rotation", 26) == 0);
    /* No keys at all. */
    CHECK(signature_verify(NULL, 0, SPEC_ID, "1614265330", SPEC_SIG, SPEC_BODY, strlen(SPEC_BODY),
                           SPEC_TS, SIGNATURE_TOLERANCE_S) == SIGNATURE_BAD_SECRET);

    /* Secret files: a missing file names its path; a good one parses. */
    signature_key key;
    vf_error err;
    vf_error_init(&err);
    CHECK(signature_key_read_file("/nonexistent/x.secret", &key, &err) == -1);
    CHECK_CONTAINS(err.text, "/nonexistent/x.secret");
    char path[] = "/tmp/test_signature_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK(write(fd, SPEC_SECRET "\n", strlen(SPEC_SECRET) + 1) > 0);
        close(fd);
        CHECK(signature_key_read_file(path, &key, NULL) == 0 && key.len == 24);
        unlink(path);
    }
}

int main(void)
{
    test_spec_vector();
    test_rotation();
    test_tampering();
    test_stale();
    test_malformed();
    test_bad_secrets();
    return test_summary();
}
