/* fuzz_signature: what a webhook receiver gets, through signature_verify.
 *
 * Input: four lines then the body: a secret ("whsec_..."; when it does not
 * parse, the Standard Webhooks test vector's key is used), webhook-id,
 * webhook-timestamp, webhook-signature. The clock is the test vector's, so
 * inputs built from it reach the MAC comparison. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "signature.h"

#define VECTOR_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define VECTOR_NOW 1614265330

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Copy the next line of [*at, end) into a fresh NUL-terminated string. */
static char *next_line(const uint8_t **at, const uint8_t *end)
{
    const uint8_t *start = *at;
    const uint8_t *nl = memchr(start, '\n', (size_t)(end - start));
    const uint8_t *stop = nl ? nl : end;
    char *line = malloc((size_t)(stop - start) + 1);
    if (!line)
        abort();
    memcpy(line, start, (size_t)(stop - start));
    line[stop - start] = '\0';
    *at = nl ? nl + 1 : end;
    return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *at = data, *end = data + size;
    char *secret = next_line(&at, end);
    char *id = next_line(&at, end);
    char *timestamp = next_line(&at, end);
    char *header = next_line(&at, end);
    signature_key keys[2];
    size_t n_keys = 0;
    if (signature_key_parse(secret, &keys[n_keys], NULL) == 0)
        n_keys++;
    if (signature_key_parse(VECTOR_SECRET, &keys[n_keys], NULL) == 0)
        n_keys++;
    signature_result result =
        signature_verify(keys, n_keys, id, timestamp, header, at, (size_t)(end - at), VECTOR_NOW,
                         SIGNATURE_TOLERANCE_S);
    if (!signature_result_text(result))
        abort();
    /* A message signed with a key we hold can be malformed or stale for the
     * verifier, but never carry a "bad signature". */
    char own[SIGNATURE_SIZE];
    char *stop = NULL;
    long long ts = strtoll(timestamp, &stop, 10);
    if (n_keys > 0 && stop && !*stop && *timestamp &&
        signature_sign(&keys[0], id, ts, at, (size_t)(end - at), own, NULL) == 0 &&
        signature_verify(keys, n_keys, id, timestamp, own, at, (size_t)(end - at), VECTOR_NOW,
                         SIGNATURE_TOLERANCE_S) == SIGNATURE_BAD_SIGNATURE)
        abort();
    free(secret);
    free(id);
    free(timestamp);
    free(header);
    return 0;
}
