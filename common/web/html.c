/* html: see html.h. */
#include "html.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void html_init(html *page)
{
    strbuf_init(&page->text);
}

void html_close(html *page)
{
    strbuf_close(&page->text);
}

static void append(html *page, const char *bytes, size_t n)
{
    strbuf_append(&page->text, bytes, n);
}

void html_raw(html *page, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(&page->text, fmt, ap);
    va_end(ap);
}

/* The character reference of a byte that means something to HTML, or NULL. */
static const char *reference(unsigned char ch)
{
    switch (ch) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

void html_text(html *page, const char *text)
{
    if (!text)
        return;
    const char *run = text; /* bytes kept as they are, appended in one go */
    for (const char *p = text; *p; p++) {
        const char *ref = reference((unsigned char)*p);
        if (!ref)
            continue;
        append(page, run, (size_t)(p - run));
        append(page, ref, strlen(ref));
        run = p + 1;
    }
    append(page, run, strlen(run));
}

void html_url_part(html *page, const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!text)
        return;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        unsigned char ch = *p;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            append(page, (const char *)p, 1);
        } else {
            char encoded[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            append(page, encoded, 3);
        }
    }
}

char *html_take(html *page, size_t *len)
{
    size_t n = page->text.len;
    char *out = strbuf_take(&page->text);
    if (out && len)
        *len = n;
    return out;
}

char *html_escape_dup(const char *text)
{
    if (!text)
        return NULL;
    html page;
    html_init(&page);
    html_text(&page, text);
    return html_take(&page, NULL);
}

void html_text_code(html *page, const char *text)
{
    if (!text)
        return;
    for (const char *at = text; *at;) {
        const char *open = strchr(at, '`');
        const char *close = open ? strchr(open + 1, '`') : NULL;
        size_t plain = close ? (size_t)(open - at) : strlen(at);
        char *piece = strndup(at, plain);
        if (!piece) {
            page->text.failed = true;
            return;
        }
        html_text(page, piece);
        free(piece);
        if (!close)
            return;
        char *code = strndup(open + 1, (size_t)(close - open - 1));
        if (!code) {
            page->text.failed = true;
            return;
        }
        html_raw(page, "<code>");
        html_text(page, code);
        html_raw(page, "</code>");
        free(code);
        at = close + 1;
    }
}

const char html_stylesheet[] =
    "body{font-family:sans-serif;margin:0;color:#222;background:#fafafa}"
    "nav{background:#234;padding:.5em 1em}nav a{color:#cde;margin-right:1.2em;"
    "text-decoration:none}nav a.on{color:#fff;font-weight:bold}"
    "main{padding:1em 1.5em;max-width:78em}h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}"
    "h3{font-size:1em;margin-top:1.2em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #ddd;"
    "padding:.25em .6em;text-align:left;vertical-align:top;font-size:.9em}"
    "th{background:#eef}tr.failed td.status{color:#a00}tr.completed td.status{color:#070}"
    "pre{background:#f0f0f0;padding:.5em;white-space:pre-wrap;word-break:break-all}"
    ".error{color:#a00;font-weight:bold}.muted{color:#777}form.inline{display:inline}"
    "form.filters input,form.filters select{margin-right:.5em}"
    ".reason{color:#a00}code{word-break:break-all}"
    "section.operation{border-top:2px solid #234;margin-top:2em}"
    ".method{display:inline-block;min-width:3.5em;padding:0 .3em;color:#fff;background:#5577aa;"
    "border-radius:3px;text-align:center;font-family:monospace}.method.post{background:#2a7a3a}"
    "form.try input{margin:0 .5em .3em 0}"
    "table.fields td:first-child code,table.parameters td:first-child code{word-break:normal;"
    "white-space:nowrap}td.name{white-space:nowrap}";
