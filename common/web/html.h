/* html: building HTML pages from text we do not control. Every string that
 * comes from the store, the broker, a client or a query string goes through
 * html_text (element content and quoted attribute values) or html_url_part
 * (inside a URL), never through html_raw, so a task id such as
 * <script>alert(1)</script> or "><img src=x onerror=...> shows as the text it
 * is instead of becoming markup.
 *
 * A page is a value type kept on the stack: html_init, append, html_take (or
 * html_close to drop it). Running out of memory is remembered and reported
 * once, by html_take, so callers append without checking each call. */
#ifndef VF_HTML_H
#define VF_HTML_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

typedef struct html {
    strbuf text; /* failed: memory ran out, html_take returns NULL */
} html;

void html_init(html *page);

/* Free what the page holds; it may be used again after html_init. */
void html_close(html *page);

/* Append markup written by us: the format and its arguments must not carry
 * outside text (numbers and our own constants only). */
void html_raw(html *page, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append `text` escaped for element content or a quoted attribute value:
 * & < > " ' become character references. NULL appends nothing. */
void html_text(html *page, const char *text);

/* Append `text` percent-encoded for a query-string value: everything but
 * A-Z a-z 0-9 - . _ ~ becomes %XX, so the result is also safe as it is inside
 * a quoted attribute. NULL appends nothing. */
void html_url_part(html *page, const char *text);

/* The page's text (malloc'd, NUL-terminated; *len without the NUL), the page
 * left empty. NULL when memory ran out while it was built. */
char *html_take(html *page, size_t *len) __attribute__((warn_unused_result));

/* `text` escaped as html_text does, as an owned string (free()); NULL when
 * text is NULL or memory runs out. */
char *html_escape_dup(const char *text);

/* Append `text` (documentation prose: OpenAPI descriptions) escaped as
 * html_text does, its `code spans` as <code> elements. Nothing else of
 * Markdown is read: a text without backticks is plain text. */
void html_text_code(html *page, const char *text);

/* The one stylesheet of the pages virtflow serves (the console at
 * /console.css, virtflow-api's reference at /docs.css): served as a file of
 * its own, since their Content-Security-Policy allows no inline style. */
extern const char html_stylesheet[];

#endif
