/* problem: error answers as RFC 9457 problem details
 * (application/problem+json), the one shape every virtflow-api error takes:
 * {"type": "about:blank", "title": ..., "status": ..., "detail": ...}. */
#ifndef VF_API_PROBLEM_H
#define VF_API_PROBLEM_H

#include "httpd.h"

#define PROBLEM_CONTENT_TYPE "application/problem+json"

/* Answer `status` with the standard title for it and `detail` (a sentence
 * for the client; NULL leaves the member out). A 503 also carries
 * Retry-After. */
void problem_reply(httpd_response *resp, int status, const char *detail);

/* The reason phrase used as a problem's title ("Not Found"). */
const char *problem_title(int status);

#endif
