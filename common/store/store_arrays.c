/* store_arrays: PostgreSQL array literals, built element by element
 * (store_internal.h), so a statement takes a batch's values as a few array
 * parameters rather than one JSON document the server parses again. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "store_internal.h"

/* Room for `more` bytes and the closing "}\0". */
static bool reserve(store_pg_array *a, size_t more)
{
    if (a->failed)
        return false;
    if (grow_array((void **)&a->text, &a->cap, a->len + more + 3, 1) < 0) {
        a->failed = true;
        return false;
    }
    if (a->len == 0)
        a->text[a->len++] = '{';
    return true;
}

/* The separator before an element. */
static void next(store_pg_array *a)
{
    if (a->n++ > 0)
        a->text[a->len++] = ',';
}

void store_pg_array_null(store_pg_array *a)
{
    if (!reserve(a, 5))
        return;
    next(a);
    memcpy(a->text + a->len, "NULL", 4);
    a->len += 4;
}

void store_pg_array_text(store_pg_array *a, const char *text)
{
    if (!text) {
        store_pg_array_null(a);
        return;
    }
    if (!reserve(a, 2 * strlen(text) + 3))
        return;
    next(a);
    a->text[a->len++] = '"';
    for (const char *c = text; *c; c++) {
        if (*c == '"' || *c == '\\')
            a->text[a->len++] = '\\';
        a->text[a->len++] = *c;
    }
    a->text[a->len++] = '"';
}

void store_pg_array_int(store_pg_array *a, int64_t value)
{
    if (!reserve(a, 24))
        return;
    next(a);
    a->len += db_int64_text(value, a->text + a->len);
}

void store_pg_array_double(store_pg_array *a, double value)
{
    /* Whole numbers (vCPUs and MiB mostly are) without the cost of %.17g,
     * a good part of a batch's claim when formatted one by one. */
    if (fabs(value) < 9007199254740992.0 && value == (double)(int64_t)value) {
        store_pg_array_int(a, (int64_t)value);
        return;
    }
    if (!reserve(a, 32))
        return;
    next(a);
    a->len += (size_t)snprintf(a->text + a->len, 30, "%.17g", value);
}

void store_pg_array_bool(store_pg_array *a, bool value)
{
    if (!reserve(a, 2))
        return;
    next(a);
    a->text[a->len++] = value ? 't' : 'f';
}

char *store_pg_array_finish(store_pg_array *a)
{
    if (!reserve(a, 0)) {
        free(a->text);
        *a = (store_pg_array){0};
        return NULL;
    }
    a->text[a->len++] = '}';
    a->text[a->len] = '\0';
    char *text = a->text;
    *a = (store_pg_array){0};
    return text;
}

void store_pg_array_free(store_pg_array *a)
{
    free(a->text);
    *a = (store_pg_array){0};
}
