/* ctl_options: see ctl_options.h. getopt_long does the reading, so every
 * command accepts what getopt users expect (--name=VALUE, -fVALUE,
 * unambiguous prefixes, options after operands); the tables say the rest. */
#include "ctl_options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "strbuf.h"
#include "version.h"

/* The globals main found before the command: the starting point of every
 * later parse. Set once, before any command runs. */
static ctl_args globals;

/* Where the bash completion goes while ctl_options_complete_bash has set
 * it, and the current command's own words. */
static FILE *completion_out;
static const char *completion_words;
/* Where the manual page goes while ctl_options_describe_man has set it. */
static FILE *man_out;

enum { OPTION_CONFIG = 0, OPTION_JSON, OPTION_DEFAULTS, OPTION_VERSION, OPTION_HELP, OPTION_OWN };

/* --defaults of the latest parse (ctl_options_defaults). */
static bool latest_defaults;

/* The global options, in the table's own shape. */
static const ctl_option global_options[] = {
    {.name = "config", .letter = 'c', .kind = CTL_OPTION_PATH},
    {.name = "json", .kind = CTL_OPTION_SET},
    {.name = "defaults", .kind = CTL_OPTION_SET},
    {.name = "version", .kind = CTL_OPTION_SET},
    {.name = "help", .letter = 'h', .kind = CTL_OPTION_SET},
};

/* Room for the global options and the largest command's own. */
#define MAX_OPTIONS 40

void ctl_options_set_globals(const ctl_args *given)
{
    globals = *given;
    globals.operand_count = 0;
    globals.operands = NULL;
}

bool ctl_options_defaults(void)
{
    return latest_defaults;
}

void ctl_options_complete_bash(FILE *out, const char *words)
{
    completion_out = out;
    completion_words = words;
}

void ctl_options_describe_man(FILE *out)
{
    man_out = out;
}

void ctl_options_roff_text(FILE *out, const char *text)
{
    bool line_start = true;
    for (const char *c = text; *c; c++) {
        if (line_start && (*c == '.' || *c == '\''))
            fputs("\\&", out);
        if (*c == '\\')
            fputs("\\e", out);
        else if (*c == '-')
            fputs("\\-", out);
        else
            fputc(*c, out);
        line_start = *c == '\n';
    }
    if (!line_start)
        fputc('\n', out);
}

static bool takes_value(ctl_option_kind kind)
{
    return kind != CTL_OPTION_SET && kind != CTL_OPTION_CLEAR && kind != CTL_OPTION_CALL_BARE;
}

static const ctl_option *option_at(const ctl_option *options, size_t index)
{
    return index < OPTION_OWN ? &global_options[index] : &options[index - OPTION_OWN];
}

/* "a, b or c" */
static void list_choices(const char *const *choices, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; choices[i] && used < size; i++) {
        const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
        int n = snprintf(buf + used, size - used, "%s%s", sep, choices[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

static int apply(const char *command, const ctl_option *option, const char *value)
{
    switch (option->kind) {
    case CTL_OPTION_SET:
        *(bool *)option->target = true;
        return 0;
    case CTL_OPTION_CLEAR:
        *(bool *)option->target = false;
        return 0;
    case CTL_OPTION_STRING:
    case CTL_OPTION_PATH:
        *(const char **)option->target = value;
        return 0;
    case CTL_OPTION_CHOICE:
        for (size_t i = 0; option->choices[i]; i++) {
            if (strcmp(value, option->choices[i]) == 0) {
                *(const char **)option->target = value;
                return 0;
            }
        }
        char valid[512];
        list_choices(option->choices, valid, sizeof valid);
        ctl_error("%s: --%s: unknown value '%s' (expected %s)", command, option->name, value,
                  valid);
        return -1;
    case CTL_OPTION_POSITIVE: {
        char name[64];
        snprintf(name, sizeof name, "--%s", option->name);
        return ctl_parse_positive(name, value, option->target);
    }
    case CTL_OPTION_CALL:
    case CTL_OPTION_CALL_BARE:
        return option->call(option, value);
    }
    return -1;
}

/* One `case` branch of the completion function: the command's options, its
 * own words, and what each option's value completes to. */
static void complete_bash(const char *command, const ctl_option *options, size_t count)
{
    FILE *out = completion_out;
    fprintf(out, "    %s)\n        opts=\"", command[0] ? command : "''");
    for (size_t i = 0; i < count; i++) {
        const ctl_option *o = option_at(options, i);
        fprintf(out, "%s--%s", i ? " " : "", o->name);
        if (o->letter)
            fprintf(out, " -%c", o->letter);
    }
    fprintf(out, "\"\n        own=\"%s\"\n        case $prev in\n",
            completion_words ? completion_words : "");
    for (size_t i = 0; i < count; i++) {
        const ctl_option *o = option_at(options, i);
        if (!takes_value(o->kind))
            continue;
        fprintf(out, "        --%s", o->name);
        if (o->letter)
            fprintf(out, " | -%c", o->letter);
        if (o->values) {
            fprintf(out, ") values=%s ;;\n", o->values);
        } else if (o->kind == CTL_OPTION_PATH) {
            fprintf(out, ") values=@file ;;\n");
        } else if (o->kind == CTL_OPTION_CHOICE) {
            fprintf(out, ") values=\"");
            for (size_t c = 0; o->choices[c]; c++)
                fprintf(out, "%s%s", c ? " " : "", o->choices[c]);
            fprintf(out, "\" ;;\n");
        } else {
            fprintf(out, ") values=@none ;;\n");
        }
    }
    fprintf(out, "        esac\n        ;;\n");
}

/* What an option's value is, as the page names it. */
static const char *value_name(ctl_option_kind kind)
{
    switch (kind) {
    case CTL_OPTION_PATH:
        return "FILE";
    case CTL_OPTION_POSITIVE:
        return "N";
    case CTL_OPTION_STRING:
    case CTL_OPTION_CHOICE:
    case CTL_OPTION_CALL:
        return "VALUE";
    default:
        return NULL;
    }
}

/* What the page says of the options several commands share, whose --help
 * names them in the synopsis only (the global ones; place's, submit's and
 * spare's request flags, CTL_REQUEST_OPTIONS). */
static const struct {
    const char *name, *text;
} shared_texts[] = {
    {"config", "The configuration file; else $VIRTFLOW_CONFIG, else /etc/virtflow/config.yaml "
               "when it exists, else the built-in defaults."},
    {"json", "Machine-readable output: JSON on stdout."},
    {"defaults", "Use the built-in defaults on purpose (commands that write refuse them "
                 "otherwise)."},
    {"version", "Print the program's version and exit."},
    {"help", "Print the command's usage and exit 0."},
    {"file", "The request body as JSON, read from FILE ('-': stdin), sent as written."},
    {"cpu", "vCPUs the VM needs (requested_cpu)."},
    {"memory", "Memory in MiB (requested_memory)."},
    {"disk", "Disk in GiB (requested_disk, default 0)."},
    {"pool", "The host pool (requested_pool, default \"default\")."},
    {"dedicated", "Only a dedicated host."},
    {"vm-name", "The VM's name (vm_name): what virtflowctl tasks --vm-name finds it by."},
    {"node-name", "Exactly this host (node_name)."},
    {"scheduler", "The scheduling profile that decides (scheduler_name; scheduler.profiles)."},
    {"annotation", "KEY=VALUE, a qemu-scheduler annotation; repeatable. For example "
                   "node.qemu-scheduler/regex=bm-00[12] picks hosts by name, "
                   "vmid.qemu-scheduler/range=100-150 the vmids."},
    {"task-id", "The task id, also the message_id; default the body's task_id, else a new "
                "tsk_ id."},
};

/* Whether `line` (its text after the indentation) starts option --name, as
 * a --help text's option lines do ("  --limit N  at most...", "  -c, --config
 * FILE ..."); on success *rest is where its description starts: after the
 * option and its VALUE placeholder (a word in capitals), or "" when the
 * description begins on the next line. */
static bool option_line(const char *line, const char *name, char letter, const char **rest)
{
    const char *at = line + strspn(line, " ");
    if (letter && at[0] == '-' && at[1] == letter && at[2] == ' ') {
        at += 2; /* "-f FILE": the short form alone */
    } else {
        if (at[0] == '-' && at[1] != '-' && at[2] == ',' && at[3] == ' ')
            at += 4; /* "-c, --config" */
        size_t len = strlen(name);
        if (strncmp(at, "--", 2) != 0 || strncmp(at + 2, name, len) != 0 ||
            (at[2 + len] != ' ' && at[2 + len] != '\0' && at[2 + len] != '\n'))
            return false;
        at += 2 + len;
    }
    at += strspn(at, " ");
    size_t word = strspn(at, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_|[].-");
    if (word > 0 && (at[word] == ' ' || at[word] == '\n' || at[word] == '\0') &&
        strspn(at, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") > 0)
        at += word;
    *rest = at + strspn(at, " ");
    return true;
}

/* The description --help gives option --name (its line, then the lines
 * indented past the option's own until a blank line or another option),
 * joined into one paragraph in out; "" when the help has no line for it. */
static void help_option_text(const char *help, const char *name, char letter, char *out,
                             size_t size)
{
    out[0] = '\0';
    size_t used = 0, indent = 0;
    bool inside = false;
    for (const char *line = help; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char copy[512];
        snprintf(copy, sizeof copy, "%.*s", (int)(len < sizeof copy ? len : sizeof copy - 1), line);
        size_t lead = strspn(copy, " ");
        const char *rest = NULL;
        if (!inside && option_line(copy, name, letter, &rest)) {
            inside = true;
            indent = lead;
        } else if (inside && (copy[lead] == '\0' || lead <= indent || copy[lead] == '-')) {
            break;
        } else if (inside) {
            rest = copy + lead;
        }
        if (inside && rest && *rest) {
            int n = snprintf(out + used, size - used, "%s%s", used ? " " : "", rest);
            if (n < 0 || (size_t)n >= size - used)
                break;
            used += (size_t)n;
        }
        line = end ? end + 1 : NULL;
    }
}

/* Collect each "examples:" block of a --help text (its indented lines) for
 * the page's EXAMPLES section. */
static strbuf examples;

static void keep_examples(const char *help)
{
    const char *at = strstr(help, "\nexamples:\n");
    if (!at)
        return;
    at += strlen("\nexamples:\n");
    const char *end = strstr(at, "\n\n");
    size_t len = end ? (size_t)(end - at) + 1 : strlen(at);
    strbuf_append(&examples, at, len);
}

void ctl_options_write_examples(FILE *out)
{
    if (!examples.data || examples.failed)
        return;
    fprintf(out, ".SH EXAMPLES\n.nf\n");
    for (const char *line = examples.data; *line;) {
        line += strspn(line, " ");
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char copy[512];
        snprintf(copy, sizeof copy, "%.*s", (int)(len < sizeof copy ? len : sizeof copy - 1), line);
        if (copy[0])
            ctl_options_roff_text(out, copy);
        line = end ? end + 1 : line + len;
    }
    fprintf(out, ".fi\n");
    strbuf_close(&examples);
}

/* One command's section of virtflowctl(1): the options of its table (the
 * global ones once, under the program's own heading), each with what its
 * --help says of it, then the --help text, preformatted as the terminal
 * shows it; its examples go to EXAMPLES. */
static void describe_man(const char *command, const ctl_option *options, size_t count,
                         void (*print_usage)(FILE *))
{
    FILE *out = man_out;
    char *help = NULL;
    size_t help_size = 0;
    FILE *stream = print_usage ? open_memstream(&help, &help_size) : NULL;
    if (stream) {
        print_usage(stream);
        fclose(stream);
        keep_examples(help);
    }
    size_t first = strcmp(command, "virtflowctl") == 0 ? 0 : OPTION_OWN;
    if (first == 0)
        fprintf(out, ".SH \"GLOBAL OPTIONS\"\n");
    else
        fprintf(out, ".SS \"virtflowctl %s\"\n", command);
    for (size_t i = first; i < count; i++) {
        const ctl_option *o = option_at(options, i);
        fprintf(out, ".TP\n");
        if (o->letter)
            fprintf(out, "\\fB\\-%c\\fR, ", o->letter);
        fprintf(out, "\\fB\\-\\-");
        for (const char *c = o->name; *c; c++)
            fputs(*c == '-' ? "\\-" : (char[]){*c, '\0'}, out);
        const char *value = value_name(o->kind);
        fprintf(out, "\\fR%s%s%s\n", value ? " \\fI" : "", value ? value : "", value ? "\\fR" : "");
        char said[1024] = "";
        if (help)
            help_option_text(help, o->name, o->letter, said, sizeof said);
        for (size_t k = 0; !said[0] && k < sizeof shared_texts / sizeof shared_texts[0]; k++)
            if (strcmp(shared_texts[k].name, o->name) == 0)
                snprintf(said, sizeof said, "%s", shared_texts[k].text);
        if (said[0]) {
            ctl_options_roff_text(out, said);
        } else if (o->kind != CTL_OPTION_CHOICE) {
            /* A command whose --help does not name it: the table knows only its kind. */
            fprintf(out, "%s\n", takes_value(o->kind) ? "Takes a value." : "A switch.");
        }
        if (o->kind == CTL_OPTION_CHOICE) {
            fprintf(out, "One of:");
            for (size_t c = 0; o->choices[c]; c++)
                fprintf(out, " \\fB%s\\fR%s", o->choices[c], o->choices[c + 1] ? "," : ".");
            fputc('\n', out);
        }
    }
    if (help) {
        fprintf(out, ".PP\n.nf\n");
        ctl_options_roff_text(out, help);
        fprintf(out, ".fi\n");
    }
    free(help);
}

int ctl_options_parse(const char *command, int argc, char **argv, const ctl_option *options,
                      void (*print_usage)(FILE *), bool stop_at_operand, ctl_args *args)
{
    size_t count = OPTION_OWN;
    while (options && options[count - OPTION_OWN].name)
        count++;
    if (count > MAX_OPTIONS) {
        ctl_error("%s: too many options for the parser (%zu)", command, count);
        return CTL_EXIT_USAGE;
    }
    if (completion_out) {
        complete_bash(command, options, count);
        return CTL_EXIT_OK;
    }
    if (man_out) {
        describe_man(command, options, count, print_usage);
        return CTL_EXIT_OK;
    }

    struct option longopts[MAX_OPTIONS + 1];
    char shortopts[2 * MAX_OPTIONS + 2];
    size_t s = 0;
    if (stop_at_operand)
        shortopts[s++] = '+';
    shortopts[s++] = ':'; /* a missing value returns ':', told apart from an unknown option */
    for (size_t i = 0; i < count; i++) {
        const ctl_option *o = option_at(options, i);
        longopts[i] =
            (struct option){o->name, takes_value(o->kind) ? required_argument : no_argument, NULL,
                            (int)(0x100 + i)};
        if (o->letter) {
            shortopts[s++] = o->letter;
            if (takes_value(o->kind))
                shortopts[s++] = ':';
        }
    }
    longopts[count] = (struct option){NULL, 0, NULL, 0};
    shortopts[s] = '\0';

    *args = globals;
    /* 0, not 1: glibc then starts afresh, dropping what it kept of the
     * previous parse (main's parse of the global options). */
    optind = 0;
    opterr = 0; /* one line of our own instead of getopt's and the whole usage */
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        size_t index = count;
        if (c >= 0x100)
            index = (size_t)(c - 0x100);
        else
            for (size_t i = 0; i < count; i++)
                if (option_at(options, i)->letter == c)
                    index = i;
        if (index >= count) {
            /* A mistyped option: say which, and where the options are listed. */
            const char *given = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
            char letter[3] = {'-', (char)optopt, '\0'};
            if (optopt > 0 && optopt < 0x100 && strncmp(given, "--", 2) != 0)
                given = letter; /* -x, or -x inside a group of letters */
            bool top = strcmp(command, "virtflowctl") == 0;
            ctl_error("%s%s%s '%s' (see virtflowctl%s%s --help)", top ? "" : command,
                      top ? "" : ": ", c == ':' ? "missing value for option" : "unknown option",
                      given, top ? "" : " ", top ? "" : command);
            return CTL_EXIT_USAGE;
        }
        switch (index) {
        case OPTION_CONFIG:
            args->config_path = optarg;
            break;
        case OPTION_JSON:
            args->json = true;
            break;
        case OPTION_DEFAULTS:
            args->defaults = true;
            break;
        case OPTION_VERSION:
            vf_version_print("virtflowctl");
            return CTL_EXIT_OK;
        case OPTION_HELP:
            print_usage(stdout);
            return CTL_EXIT_OK;
        default:
            if (apply(command, option_at(options, index), optarg) < 0)
                return CTL_EXIT_USAGE;
        }
    }
    args->operands = argv + optind;
    args->operand_count = argc - optind;
    latest_defaults = args->defaults;
    return -1;
}

int ctl_parse_positive(const char *option, const char *text, long *out)
{
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value <= 0) {
        ctl_error("%s: expected a positive number, got '%s'", option, text);
        return -1;
    }
    *out = value;
    return 0;
}
