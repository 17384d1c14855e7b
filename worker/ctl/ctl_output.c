/* ctl_output: what virtflowctl writes for an operator to read, escaped
 * (ctl.h: ctl_text, ctl_error). Below every other ctl file: main, the
 * option parser and the commands all report through it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "text_escape.h"

const char *ctl_text(const char *text)
{
    static char *slots[CTL_TEXT_SLOTS];
    static size_t next;
    if (!text)
        return "";
    char *escaped = text_escape_dup(text);
    if (!escaped)
        return "(out of memory)";
    free(slots[next]);
    slots[next] = escaped;
    next = (next + 1) % CTL_TEXT_SLOTS;
    return escaped;
}

void ctl_error(const char *fmt, ...)
{
    /* Errors quote message ids, task ids and the store's texts: escaped
     * like everything else shown to an operator. */
    char message[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "virtflowctl: %s\n", ctl_text(message));
}
