/* html: outside text becomes text, never markup, in element content, quoted
 * attributes and URLs; our own markup passes as it is; a page grows past its
 * first buffer without losing anything. */
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "testlib.h"

static char *built(void (*add)(html *, const char *), const char *text)
{
    html page;
    html_init(&page);
    add(&page, text);
    size_t len = 0;
    char *out = html_take(&page, &len);
    CHECK(out != NULL);
    CHECK(out == NULL || len == strlen(out));
    return out;
}

static void test_hostile_ids_become_text(void)
{
    char *out = built(html_text, "<script>alert(1)</script>");
    CHECK_STR(out, "&lt;script&gt;alert(1)&lt;/script&gt;");
    free(out);
    out = built(html_text, "\"><img src=x onerror=alert(1)>");
    CHECK_STR(out, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
    free(out);
    out = built(html_text, "' onmouseover='x' & &amp;");
    CHECK_STR(out, "&#39; onmouseover=&#39;x&#39; &amp; &amp;amp;");
    free(out);
    /* Plain ids and UTF-8 stay byte for byte. */
    out = built(html_text, "tsk_019a-ok:1.2 caf\xc3\xa9");
    CHECK_STR(out, "tsk_019a-ok:1.2 caf\xc3\xa9");
    free(out);
}

static void test_url_part(void)
{
    char *out = built(html_url_part, "tsk_1-a.b~c");
    CHECK_STR(out, "tsk_1-a.b~c");
    free(out);
    out = built(html_url_part, "a b&c=d\"<>/?#%");
    CHECK_STR(out, "a%20b%26c%3Dd%22%3C%3E%2F%3F%23%25");
    free(out);
    out = built(html_url_part, "\xc3\xa9");
    CHECK_STR(out, "%C3%A9");
    free(out);
}

static void test_raw_and_growth(void)
{
    html page;
    html_init(&page);
    html_raw(&page, "<p class=\"n\">%d</p>", 42);
    html_text(&page, NULL); /* nothing */
    for (int i = 0; i < 5000; i++)
        html_text(&page, "<&>");
    size_t len = 0;
    char *out = html_take(&page, &len);
    CHECK(out != NULL);
    if (out) {
        CHECK(strncmp(out, "<p class=\"n\">42</p>&lt;&amp;&gt;", 32) == 0);
        CHECK(len == strlen("<p class=\"n\">42</p>") + 5000 * strlen("&lt;&amp;&gt;"));
        CHECK(strlen(out) == len);
    }
    free(out);
    /* An empty page is an empty string, not a failure. */
    html_init(&page);
    out = html_take(&page, &len);
    CHECK(out != NULL && len == 0 && out[0] == '\0');
    free(out);
    html_close(&page); /* harmless after take */
}

static void test_dup(void)
{
    char *copy = html_escape_dup("a<b");
    CHECK_STR(copy, "a&lt;b");
    free(copy);
    CHECK(html_escape_dup(NULL) == NULL);
}

int main(void)
{
    test_hostile_ids_become_text();
    test_url_part();
    test_raw_and_growth();
    test_dup();
    return test_summary();
}
