/* virtflowctl: for operators and clients (docs/contracts.md "Programs"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "log.h"
#include "version.h"

static const ctl_command commands[] = {
    {"place", "dry-run a placement: where would this request go, and why", ctl_place},
    {"verify", "check a webhook signature (secret, headers, body)", ctl_verify},
    {"deliveries",
     "list webhook deliveries and their state; redeliver in bulk (deliveries redeliver)",
     ctl_deliveries},
    {"redeliver", "send an event's webhook again", ctl_redeliver},
    {"submit", "publish a task.schedule request (--wait for its result)", ctl_submit},
    {"release", "give a task's reservation back at once (task.release)", ctl_release},
    {"tasks", "list tasks, newest first, with filters", ctl_tasks},
    {"task", "one task: request, result, reservations, full history", ctl_task},
    {"dead", "list or redrive the messages parked in virtflow.dead", ctl_dead},
    {"nodes", "hosts, their live reservations and what is free", ctl_nodes},
    {"stats", "counts by status and reason, queue depths, oldest pending work", ctl_stats},
    {"workers", "each live worker and relay: host, version, heartbeat, leases, work in hand",
     ctl_workers},
    {"health", "probe: the store answers (and --broker: the broker accepts a login)", ctl_health},
    {"spares", "list spare VMs not yet released (age, upgrade, host, vmid, state)", ctl_spares},
    {"spare", "publish spare.prepare or spare.release (--wait to follow it to its end)", ctl_spare},
    {"prune", "delete (--dry-run: count) final rows older than --older-than D", ctl_prune},
    {"simulate", "replay recorded requests under a --candidate configuration, compare",
     ctl_simulate},
    {"explain", "what a task's decision was made over; --replay: decide it again, compare",
     ctl_explain},
    {"headroom", "VMs of each reference shape that still fit; --forecast: days left at the rate",
     ctl_headroom},
    {"serve", "web console over the store (read-only unless --allow-actions)", ctl_serve},
    {"config", "check the configuration file (config check), as the programs load it", ctl_config},
    {"completion",
     "print the bash or zsh completion script (completion bash|zsh) or virtflowctl(1) (man)",
     ctl_completion},
};

/* The words of commands that take their own (completed like commands). */
static const struct {
    const char *command;
    const char *words;
} command_words[] = {
    {"dead", "list redrive"},
    {"deliveries", "redeliver"},
    {"spare", "prepare release"},
    {"completion", "bash zsh man"},
    {"task", "cancel retry-now resubmit @tasks"},
    {"release", "@tasks"},
    {"explain", "@tasks"},
    {"config", "check"},
};

static const char *words_of(const char *command)
{
    for (size_t i = 0; i < sizeof command_words / sizeof command_words[0]; i++)
        if (strcmp(command_words[i].command, command) == 0)
            return command_words[i].words;
    return NULL;
}

static vf_config *load_config(const char *path, const char *writing)
{
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(path, &err);
    if (!config) {
        ctl_error("%s", err.text);
        return NULL;
    }
    const char *env = getenv("VIRTFLOW_CONFIG");
    bool named = path || (env && *env);
    if (config_is_builtin(config) && writing && !ctl_options_defaults()) {
        /* Built-in defaults name a broker on 127.0.0.1 and a store in the
         * working directory: writing there by accident declares queues and
         * leaves messages nobody consumes. */
        ctl_error(
            "%s: no configuration file (no -c, no $VIRTFLOW_CONFIG, no %s, no VIRTFLOW_AMQP_* or "
            "VIRTFLOW_STORE_* variable): refusing to "
            "write to the built-in defaults' broker and store; give -c FILE, or "
            "--defaults to use them on purpose",
            writing, CONFIG_SYSTEM_PATH);
        config_free(config);
        return NULL;
    }
    if (config_is_builtin(config))
        fprintf(stderr,
                "virtflowctl: no configuration file (no -c, no $VIRTFLOW_CONFIG, no %s): "
                "using built-in defaults\n",
                CONFIG_SYSTEM_PATH);
    else if (!named && config->path)
        fprintf(stderr, "virtflowctl: using %s\n", ctl_text(config->path));
    else if (!config->path)
        fprintf(stderr,
                "virtflowctl: no configuration file: built-in defaults and %zu VIRTFLOW_* "
                "variables\n",
                config->n_env);
    return config;
}

vf_config *ctl_load_config(const char *path)
{
    return load_config(path, NULL);
}

vf_config *ctl_load_config_writing(const char *path, const char *command)
{
    return load_config(path, command);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl [-c FILE] [--json] COMMAND [OPTIONS]\n"
                 "       virtflowctl --version\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nEvery command takes -c FILE (else $VIRTFLOW_CONFIG, else\n"
                 "/etc/virtflow/config.yaml when it exists, else built-in defaults), --json for\n"
                 "machine-readable output, and --help; -c, --json and --defaults may also come\n"
                 "before the command. Commands that write to the broker or the store (submit,\n"
                 "release, spare, dead redrive, redeliver, prune, serve --allow-actions) refuse\n"
                 "the built-in defaults unless --defaults is given.\n"
                 "\nexit status: 0 ok, 1 a negative answer (e.g. not placed), 2 usage or invalid\n"
                 "request, 3 configuration error, 4 broker, store or inventory unreachable,\n"
                 "5 --wait timed out: published, but not final yet.\n");
}

static void completion_usage(FILE *out)
{
    fprintf(
        out,
        "usage: virtflowctl completion bash|zsh|man\n"
        "\n"
        "Print the bash completion script (commands, options, the values of options\n"
        "with a fixed set of them). Installed as\n"
        "share/bash-completion/completions/virtflowctl; to try it at once:\n"
        "  source <(virtflowctl completion bash)\n"
        "'completion zsh' prints the same for zsh (share/zsh/vendor-completions/\n"
        "_virtflowctl). 'completion man' prints the manual page virtflowctl(1) in roff, written\n"
        "from the same tables (installed as share/man/man1/virtflowctl.1).\n");
}

/* virtflowctl(1) in roff (completion man; built and installed by
 * worker/CMakeLists.txt): each command's parser writes its own section from
 * its option table and its --help text (ctl_options_describe_man). */
static int write_manual(char **argv)
{
    printf(".TH VIRTFLOWCTL 1 \"\" \"virtflow %s\" \"virtflow manual\"\n"
           ".SH NAME\nvirtflowctl \\- operate a virtflow installation\n"
           ".SH SYNOPSIS\n\\fBvirtflowctl\\fR [\\fIglobal options\\fR] \\fIcommand\\fR "
           "[\\fIoptions\\fR] [\\fIarguments\\fR]\n"
           ".SH DESCRIPTION\n.nf\n",
           vf_version());
    char *text = NULL;
    size_t size = 0;
    FILE *help = open_memstream(&text, &size);
    if (!help)
        return CTL_EXIT_USAGE;
    usage(help);
    fclose(help);
    ctl_options_roff_text(stdout, text);
    free(text);
    printf(".fi\n");
    ctl_args unused;
    ctl_options_describe_man(stdout);
    int rc = ctl_options_parse("virtflowctl", 1, argv, NULL, NULL, true, &unused);
    printf(".SH COMMANDS\n");
    for (size_t i = 0; rc == CTL_EXIT_OK && i < sizeof commands / sizeof commands[0]; i++) {
        char *command_argv[] = {(char *)commands[i].name, NULL};
        if (commands[i].run(1, command_argv) != CTL_EXIT_OK) {
            ctl_error("completion: the %s command wrote no manual section", commands[i].name);
            rc = CTL_EXIT_USAGE;
        }
    }
    ctl_options_describe_man(NULL);
    ctl_options_write_examples(stdout);
    printf(".SH FILES\n.TP\n/etc/virtflow/config.yaml\nThe configuration read when neither "
           "\\fB\\-c\\fR nor \\fBVIRTFLOW_CONFIG\\fR names one (virtflow.yaml(5)).\n"
           ".SH \"SEE ALSO\"\n\\fBvirtflow\\-worker\\fR(8), \\fBvirtflow\\-relay\\fR(8), "
           "\\fBvirtflow\\-api\\fR(8), /usr/share/doc/virtflow/operations.md\n");
    return rc;
}

/* The `case` branches both completion functions share: one per command,
 * written by the command's own parser (ctl_options.h), setting opts (its
 * options), own (its own words) and values (what the option before the
 * cursor takes: @file, @none or the words). */
static int write_branches(char **argv)
{
    char names[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int n = snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "", commands[i].name);
        if (n > 0 && (size_t)n < sizeof names - used)
            used += (size_t)n;
    }
    /* Each command's parser writes its own branch (ctl_options.h). */
    ctl_args unused;
    ctl_options_complete_bash(stdout, names);
    if (ctl_options_parse("", 1, argv, NULL, usage, true, &unused) != CTL_EXIT_OK)
        return CTL_EXIT_USAGE;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char *command_argv[] = {(char *)commands[i].name, NULL};
        ctl_options_complete_bash(stdout, words_of(commands[i].name));
        if (commands[i].run(1, command_argv) != CTL_EXIT_OK) {
            ctl_options_complete_bash(NULL, NULL);
            ctl_error("completion: the %s command wrote no completion", commands[i].name);
            return CTL_EXIT_USAGE;
        }
    }
    ctl_options_complete_bash(NULL, NULL);
    return CTL_EXIT_OK;
}

/* The shell function both completions share: the words given, each as it
 * is, but @tasks, @hosts, @pools and @receivers as what `virtflowctl
 * completion values` reads now, run as `self` with the line's -c FILE
 * (the completion function's $config); `print_word` prints one word. */
static void words_function(const char *self, const char *print_word)
{
    printf("# Words as they are, and for @tasks, @hosts, @pools, @receivers what\n"
           "# `virtflowctl completion values` reads now (with the line's -c FILE).\n"
           "_virtflowctl_words()\n"
           "{\n"
           "    local word\n"
           "    for word; do\n"
           "        if [[ $word == @* ]]; then\n"
           "            %s \"${config[@]}\" completion values \"${word#@}\" 2>/dev/null\n"
           "        else\n"
           "            %s\n"
           "        fi\n"
           "    done\n"
           "}\n",
           self, print_word);
}

/* The zsh completion: the same branches in a function of zsh's completion
 * system (compadd, _files), installed as share/zsh/vendor-completions/_virtflowctl. */
static int write_zsh(char **argv)
{
    printf("#compdef virtflowctl\n"
           "# zsh completion for virtflowctl, generated by `virtflowctl completion zsh`\n"
           "# from the option tables the program parses its command line with.\n");
    words_function("${words[1]}", "print -r -- \"$word\"");
    printf("_virtflowctl()\n"
           "{\n"
           "    local cur=${words[CURRENT]} prev=${words[CURRENT-1]}\n"
           "    local opts own values command i\n"
           "    local -a config\n"
           "    # --option=VALUE: complete VALUE as the option's\n"
           "    if [[ $cur == --*=* ]]; then\n"
           "        prev=${cur%%%%=*}\n"
           "        compset -P '*='\n"
           "        cur=${cur#*=}\n"
           "    fi\n"
           "    for ((i = 2; i < CURRENT; i++)); do\n"
           "        case ${words[i]} in\n"
           "        -c | --config) ((i++)); config=(-c \"${words[i]}\") ;;\n"
           "        -*) ;;\n"
           "        *)\n"
           "            command=${words[i]}\n"
           "            break\n"
           "            ;;\n"
           "        esac\n"
           "    done\n"
           "    case $command in\n");
    if (write_branches(argv) != CTL_EXIT_OK)
        return CTL_EXIT_USAGE;
    printf("    *) return 1 ;;\n"
           "    esac\n"
           "    if [[ $values == @file ]]; then\n"
           "        _files\n"
           "    elif [[ $values == @none ]]; then\n"
           "        _message 'a value'\n"
           "    elif [[ -n $values ]]; then\n"
           "        compadd -- ${(f)\"$(_virtflowctl_words ${=values})\"}\n"
           "    elif [[ $cur == -* || -z $own ]]; then\n"
           "        compadd -- ${=opts}\n"
           "    else\n"
           "        compadd -- ${(f)\"$(_virtflowctl_words ${=own})\"}\n"
           "    fi\n"
           "}\n"
           "_virtflowctl \"$@\"\n");
    return CTL_EXIT_OK;
}

int ctl_completion(int argc, char **argv)
{
    ctl_args args;
    int rc = ctl_options_parse("completion", argc, argv, NULL, completion_usage, false, &args);
    if (rc >= 0)
        return rc;
    if (args.operand_count == 1 && strcmp(args.operands[0], "man") == 0)
        return write_manual(argv);
    if (args.operand_count == 2 && strcmp(args.operands[0], "values") == 0)
        return ctl_completion_values(args.operands[1], args.config_path);
    if (args.operand_count == 1 && strcmp(args.operands[0], "zsh") == 0)
        return write_zsh(argv);
    if (args.operand_count != 1 || strcmp(args.operands[0], "bash") != 0) {
        ctl_error("completion: expected bash, zsh or man");
        return CTL_EXIT_USAGE;
    }
    /* The function finds the command (the first word that is neither an
     * option nor -c's value), then offers what that command's branch of the
     * case lists: the values of the option before the cursor, else options,
     * else the command's own words. */
    printf("# bash completion for virtflowctl, generated by `virtflowctl completion bash`\n"
           "# from the option tables the program parses its command line with.\n");
    words_function("\"${COMP_WORDS[0]}\"", "printf '%s\\n' \"$word\"");
    printf("_virtflowctl()\n"
           "{\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local opts own values command i config=()\n"
           "    COMPREPLY=()\n"
           "    # --option=VALUE: bash splits at '=' (COMP_WORDBREAKS)\n"
           "    if [[ $cur == = ]]; then\n"
           "        prev=${COMP_WORDS[COMP_CWORD-1]} cur=\n"
           "    elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then\n"
           "        prev=${COMP_WORDS[COMP_CWORD-2]}\n"
           "    fi\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        case ${COMP_WORDS[i]} in\n"
           "        -c | --config)\n"
           "            [[ ${COMP_WORDS[i+1]} == = ]] && ((i++))\n"
           "            ((i++))\n"
           "            config=(-c \"${COMP_WORDS[i]}\")\n"
           "            ;;\n"
           "        -*) ;;\n"
           "        *)\n"
           "            command=${COMP_WORDS[i]}\n"
           "            break\n"
           "            ;;\n"
           "        esac\n"
           "    done\n"
           "    case $command in\n");
    if (write_branches(argv) != CTL_EXIT_OK)
        return CTL_EXIT_USAGE;
    printf("    *) return 0 ;;\n"
           "    esac\n"
           "    if [[ $values == @file ]]; then\n"
           "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "    elif [[ $values == @none ]]; then\n"
           "        COMPREPLY=()\n"
           "    elif [[ -n $values ]]; then\n"
           "        COMPREPLY=($(compgen -W \"$(_virtflowctl_words $values)\" -- \"$cur\"))\n"
           "    elif [[ $cur == -* || -z $own ]]; then\n"
           "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "    else\n"
           "        COMPREPLY=($(compgen -W \"$(_virtflowctl_words $own)\" -- \"$cur\"))\n"
           "    fi\n"
           "    return 0\n"
           "}\n"
           "complete -F _virtflowctl virtflowctl\n");
    return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
    vf_log_set_program("virtflowctl");
    vf_log_set_level(VF_LOG_WARN);
    /* Global options before the command, as git and kubectl take them. */
    ctl_args globals;
    int rc = ctl_options_parse("virtflowctl", argc, argv, NULL, usage, true, &globals);
    if (rc >= 0)
        return rc;
    if (globals.operand_count < 1) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    const char *name = globals.operands[0];
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return CTL_EXIT_OK;
    }
    ctl_options_set_globals(&globals);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(globals.operand_count, globals.operands);
    ctl_error("unknown command '%s' (try virtflowctl --help)", name);
    return CTL_EXIT_USAGE;
}
