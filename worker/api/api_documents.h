/* The documents virtflow-api serves as they are kept in schema/, embedded at
 * build time (schema/embed_files.cmake): NUL-terminated, *_len bytes. */
#ifndef VF_API_DOCUMENTS_H
#define VF_API_DOCUMENTS_H

#include <stddef.h>

extern const char api_openapi_json[]; /* schema/openapi.json */
extern const size_t api_openapi_json_len;
extern const char api_request_schema_json[]; /* schema/request.task.schedule.json */
extern const size_t api_request_schema_json_len;
extern const char api_spare_prepare_schema_json[]; /* schema/request.spare.prepare.json */
extern const size_t api_spare_prepare_schema_json_len;
extern const char api_spare_release_schema_json[]; /* schema/request.spare.release.json */
extern const size_t api_spare_release_schema_json_len;

#endif
