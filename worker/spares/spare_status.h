/* spare_status: follow a provisioner's pipeline or job. Both provisioners
 * (GitLab and AWX) answer a GET of the job's URL with JSON whose "status"
 * string says where it stands; this asks and reads that. */
#ifndef VF_SPARE_STATUS_H
#define VF_SPARE_STATUS_H

#include <stddef.h>

#include "vf_error.h"

typedef struct spare_status_request {
    const char *url;           /* the job's or pipeline's API URL */
    const char *authorization; /* "Name: value" header line (a secret); NULL: none */
    const char *what;          /* names the job in error texts: "awx job 12" */
    long refused[2];           /* HTTP statuses that mean the token may not read it */
    const char *refused_hint;  /* appended to the error text on those */
} spare_status_request;

/* GET request->url (10 s timeout) and copy the answer's "status" into status
 * (size bytes). Returns 0, or -1 with err VF_EUNAVAILABLE (unreachable, HTTP
 * status other than 200, no "status" in the answer). The authorization
 * header never reaches an error text. */
int spare_status_get(const spare_status_request *request, char *status, size_t size, vf_error *err)
    __attribute__((warn_unused_result));

#endif
