/* ctl_options: virtflowctl's one option parser. A command describes its
 * options as a table (name, short letter, what the value is and where it
 * goes) and ctl_options_parse does the rest, so every command reads its
 * command line the same way and the bash completion is generated from the
 * same tables (ctl_options_complete_bash).
 *
 * Every command also takes the global options -c/--config FILE, --json,
 * --defaults, --version and -h/--help, before the command (`virtflowctl -c FILE tasks --json`, like
 * git and kubectl) or after it. An option whose values form a closed set (CTL_OPTION_CHOICE)
 * refuses any other value with exit 2 and the list of the valid ones. */
#ifndef VF_CTL_OPTIONS_H
#define VF_CTL_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

typedef enum {
    CTL_OPTION_SET,      /* --name: *(bool *)target = true */
    CTL_OPTION_CLEAR,    /* --name: *(bool *)target = false (--no-reservations) */
    CTL_OPTION_STRING,   /* --name VALUE: *(const char **)target = VALUE, borrowed from argv */
    CTL_OPTION_PATH,     /* CTL_OPTION_STRING naming a file (completed as one) */
    CTL_OPTION_CHOICE,   /* CTL_OPTION_STRING, VALUE one of `choices` */
    CTL_OPTION_POSITIVE, /* --name N: *(long *)target = N, an integer > 0 */
    CTL_OPTION_CALL,     /* --name VALUE: call(option, VALUE) */
    CTL_OPTION_CALL_BARE /* --name: call(option, NULL) */
} ctl_option_kind;

typedef struct ctl_option ctl_option;
struct ctl_option {
    const char *name; /* the long name without "--"; NULL ends a table */
    char letter;      /* the short form (-f), or 0 */
    ctl_option_kind kind;
    void *target;
    const char *const *choices; /* CTL_OPTION_CHOICE: NULL-terminated */
    /* CTL_OPTION_CALL: apply VALUE; returns 0, or -1 after printing what is
     * wrong with it. `detail` is the callee's to interpret. */
    int (*call)(const ctl_option *option, const char *value);
    const char *detail;
    /* What the completion offers for the value, read when it completes
     * (`virtflowctl completion values KIND`): "@tasks", "@hosts", "@pools",
     * "@receivers"; NULL: by the kind. */
    const char *values;
};

/* What every command line carries besides its own options. */
typedef struct ctl_args {
    const char *config_path; /* -c/--config FILE; NULL: $VIRTFLOW_CONFIG, then defaults */
    bool json;               /* --json */
    bool defaults;           /* --defaults: writing on built-in defaults is meant */
    int operand_count;
    char **operands; /* the arguments that are not options, borrowed from argv */
} ctl_args;

/* The global options given before the command; every later
 * ctl_options_parse starts from them. Called once by main. */
void ctl_options_set_globals(const ctl_args *globals);

/* Parse argv[1..argc-1] of `command` (argv[0] is its name) against `options`
 * (may be NULL) and the global options. Options and operands may be mixed;
 * "--" ends the options. With `stop_at_operand` the first operand and
 * everything after it are left as operands (main: the command and its own
 * arguments). Returns -1 to go on, with *args filled; or the exit status to
 * return at once: CTL_EXIT_OK after printing print_usage(stdout) for --help or the
 * version for --version,
 * CTL_EXIT_USAGE after printing the error (unknown option, missing value,
 * a value outside its closed set, with the valid ones). */
int ctl_options_parse(const char *command, int argc, char **argv, const ctl_option *options,
                      void (*print_usage)(FILE *), bool stop_at_operand, ctl_args *args)
    __attribute__((warn_unused_result));

/* --defaults as the latest ctl_options_parse found it (a global option, so
 * ctl_load_config_writing reads it here rather than from every command). */
bool ctl_options_defaults(void);

/* Completion instead of parsing: while `out` is set, ctl_options_parse
 * writes the completion of the command it is given to `out` (a `case`
 * branch, valid bash and zsh, of the function main.c writes around it) and returns
 * CTL_EXIT_OK without parsing. `words` are the command's own words (the
 * subcommands of `dead`), may be NULL. NULL ends it. */
void ctl_options_complete_bash(FILE *out, const char *words);

/* The same for the manual page: while `out` is set, ctl_options_parse writes
 * the command's section of virtflowctl(1) in roff to `out` (a heading, its
 * options from the table with their value kinds and closed sets, then its
 * --help text) and returns CTL_EXIT_OK without parsing. NULL ends it. */
void ctl_options_describe_man(FILE *out);

/* `text` as roff body text to `out`: backslashes escaped, a line starting
 * with '.' or '\'' kept from being read as a request. */
void ctl_options_roff_text(FILE *out, const char *text);

/* After every command wrote its section (ctl_options_describe_man): the
 * page's EXAMPLES section, the "examples:" blocks of their --help texts in
 * order, and forget them. Nothing when none had one. */
void ctl_options_write_examples(FILE *out);

#endif
