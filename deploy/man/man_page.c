/* man_page: writes the manual pages the build installs, in roff, from text
 * the project already keeps in one place (run at build time by
 * worker/CMakeLists.txt; no library of the project's, so it builds first):
 *
 *   man_page help NAME SECTION SUMMARY < `NAME --help`
 *     a daemon's page: its --help text (usage lines as SYNOPSIS, the rest as
 *     DESCRIPTION) and the options common/config/program.c parses for every daemon;
 *   man_page markdown NAME SECTION SUMMARY < docs/configuration.md
 *     virtflow.yaml(5) from the configuration reference, itself generated
 *     from the key table (common/config/config_keys.c): a section per table, an
 *     entry per key with its value, default and meaning.
 *
 * Exits 0, or 2 on a bad command line, 1 when the input is unusable. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `text` (length `length`) as roff: backslashes escaped, markdown's `code`
 * and **strong** marks and link targets dropped, a leading '.' or '\''
 * kept from being read as a request. */
static void put_text(const char *text, size_t length, bool line_start)
{
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (line_start && (c == '.' || c == '\''))
            fputs("\\&", stdout);
        line_start = false;
        if (c == '\\')
            fputs("\\e", stdout);
        else
            putchar(c);
    }
}

/* Markdown inline text: `code` and **strong** lose their marks,
 * [text](target) keeps its text. */
static void put_markdown(const char *text, size_t length, bool line_start)
{
    size_t i = 0;
    while (i < length) {
        if (text[i] == '`' || (text[i] == '*' && i + 1 < length && text[i + 1] == '*')) {
            i += text[i] == '`' ? 1 : 2;
            continue;
        }
        if (text[i] == ']' && i + 1 < length && text[i + 1] == '(') {
            const char *close = memchr(text + i, ')', length - i);
            if (close) {
                i = (size_t)(close - text) + 1;
                continue;
            }
        }
        if (text[i] == '[') {
            const char *close = memchr(text + i, ']', length - i);
            if (close && (size_t)(close - text) + 1 < length && close[1] == '(') {
                i++;
                continue;
            }
        }
        put_text(text + i, 1, line_start);
        line_start = false;
        i++;
    }
}

static void header(const char *name, const char *section, const char *summary)
{
    printf(".TH \"");
    for (const char *c = name; *c; c++)
        putchar(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    printf("\" %s \"\" \"virtflow\" \"virtflow manual\"\n.SH NAME\n", section);
    put_text(name, strlen(name), false);
    printf(" \\- ");
    put_text(summary, strlen(summary), false);
    printf("\n");
}

/* A daemon's --help: usage lines up to the first blank line, then the rest. */
static int write_help(const char *name)
{
    char line[4096];
    bool synopsis = true, any = false;
    printf(".SH SYNOPSIS\n.nf\n");
    while (fgets(line, sizeof line, stdin)) {
        any = true;
        if (synopsis && line[0] == '\n') {
            synopsis = false;
            printf(".fi\n.SH DESCRIPTION\n.nf\n");
            continue;
        }
        const char *text = line;
        if (synopsis && strncmp(text, "usage: ", 7) == 0)
            text += 7;
        else if (synopsis)
            text += strspn(text, " ");
        put_text(text, strlen(text), true);
    }
    printf(".fi\n");
    if (!any) {
        fprintf(stderr, "man_page: no --help text for %s on stdin\n", name);
        return 1;
    }
    /* What common/config/program.c's getopt_long table accepts, for every daemon. */
    printf(".SH OPTIONS\n"
           ".TP\n\\fB\\-c\\fR, \\fB\\-\\-config\\fR \\fIFILE\\fR\n"
           "The configuration file (virtflow.yaml(5)); else $VIRTFLOW_CONFIG, else "
           "/etc/virtflow/config.yaml when it exists.\n"
           ".TP\n\\fB\\-\\-defaults\\fR\nStart on the built-in defaults when no file is "
           "named or found.\n"
           ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nPrint the usage text and exit 0.\n"
           ".TP\n\\fB\\-\\-version\\fR\nPrint the version (and commit) and exit 0.\n"
           ".SH FILES\n.TP\n/etc/virtflow/config.yaml\nThe configuration (virtflow.yaml(5)).\n"
           ".SH \"SEE ALSO\"\n\\fBvirtflowctl\\fR(1), \\fBvirtflow.yaml\\fR(5), "
           "/usr/share/doc/virtflow/operations.md\n");
    return 0;
}

/* One table row "| a | b | c | d |": cells into `cells` (trimmed, borrowed
 * from `line`, which it modifies). Returns how many. */
static size_t split_row(char *line, char **cells, size_t max)
{
    size_t count = 0;
    char *p = line + 1;
    while (count < max) {
        char *bar = strchr(p, '|');
        if (!bar)
            break;
        *bar = '\0';
        while (*p == ' ')
            p++;
        for (char *end = bar; end > p && end[-1] == ' ';)
            *--end = '\0';
        cells[count++] = p;
        p = bar + 1;
    }
    return count;
}

static int write_markdown(void)
{
    char line[8192];
    bool in_paragraph = false, any = false, in_section = false;
    const char *columns[8] = {0};
    size_t column_count = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '\0') {
            in_paragraph = false;
            continue;
        }
        if (strncmp(line, "# ", 2) == 0 || strncmp(line, "<!--", 4) == 0 ||
            strncmp(line, "|---", 4) == 0)
            continue;
        if (strncmp(line, "## ", 3) == 0) {
            printf(".SH \"");
            for (const char *c = line + 3; *c; c++)
                putchar(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c == '"' ? '\'' : *c);
            printf("\"\n");
            in_paragraph = false;
            in_section = true;
            column_count = 0;
            continue;
        }
        if (line[0] == '|') {
            char *cells[8];
            size_t n = split_row(line, cells, 8);
            if (n < 2)
                continue;
            if (column_count == 0) { /* the header row names the columns */
                static char names[8][64];
                for (size_t i = 0; i < n; i++) {
                    snprintf(names[i], sizeof names[i], "%s", cells[i]);
                    columns[i] = names[i];
                }
                column_count = n;
                continue;
            }
            any = true;
            printf(".TP\n\\fB");
            put_markdown(cells[0], strlen(cells[0]), false);
            printf("\\fR\n");
            for (size_t i = 1; i < n; i++) {
                printf("%s", i > 1 ? ".br\n" : "");
                if (i < column_count && i > 1) {
                    put_text(columns[i], strlen(columns[i]), true);
                    printf(": ");
                    put_markdown(cells[i], strlen(cells[i]), false);
                } else {
                    put_markdown(cells[i], strlen(cells[i]), true);
                }
                printf("\n");
            }
            continue;
        }
        column_count = 0;
        if (!in_section)
            printf(".SH DESCRIPTION\n");
        in_section = true;
        if (!in_paragraph)
            printf(".PP\n");
        in_paragraph = true;
        put_markdown(line, strlen(line), true);
        printf("\n");
    }
    if (!any) {
        fprintf(stderr, "man_page: no table rows in the markdown on stdin\n");
        return 1;
    }
    printf(".SH \"SEE ALSO\"\n\\fBvirtflow\\-worker\\fR(8), \\fBvirtflow\\-relay\\fR(8), "
           "\\fBvirtflow\\-api\\fR(8), \\fBvirtflowctl\\fR(1)\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "help") != 0 && strcmp(argv[1], "markdown") != 0)) {
        fprintf(stderr, "usage: man_page help|markdown NAME SECTION SUMMARY < input\n");
        return 2;
    }
    header(argv[2], argv[3], argv[4]);
    return strcmp(argv[1], "help") == 0 ? write_help(argv[2]) : write_markdown();
}
