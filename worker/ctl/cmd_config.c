/* virtflowctl config check: load the configuration the programs would load,
 * with the same loader and checks, and say whether it is good (nginx -t). */
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "engine.h"

static void config_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl config check [-c CONFIG] [--json]\n"
                 "\n"
                 "Load and check the configuration with the loader virtflow-worker and\n"
                 "virtflow-relay use (-c FILE, else $VIRTFLOW_CONFIG, else\n"
                 "/etc/virtflow/config.yaml when it exists, else built-in defaults; then the\n"
                 "VIRTFLOW_* variables over it) and print \"ok\", the file and each key a\n"
                 "variable set, or the error (file, line, key; or the variable); scheduler\n"
                 "plugins and profiles are built as the worker builds them. Keys that must\n"
                 "agree (docs/configuration.md) are checked: a contradiction is an error, and\n"
                 "what the programs only warn of or keep longer is printed as a warning\n"
                 "(--json: \"warnings\"). Reads no secret and reaches no broker or store.\n"
                 "\n"
                 "exit status: 0 valid, 2 usage, 3 invalid or unreadable.\n");
}

/* The scheduler's engine and every profile's, built and freed. */
static int check_plugins(const vf_config *config, vf_error *err)
{
    sched_engine *engine = sched_engine_from_config(config, NULL, err);
    sched_engine_free(engine);
    return engine ? 0 : -1;
}

/* A rule the configuration breaks without being refused (config.h "keys
 * that must agree"), for the output. */
static void collect_rule(const config_rule *rule, const char *why, void *user)
{
    json_array_append_new(user, json_pack("{s:s, s:s, s:s?, s:s}", "why", why, "outcome",
                                          rule->outcome == CONFIG_RULE_KEEPS ? "keeps" : "warns",
                                          "program", rule->program, "keys", rule->keys));
}

int ctl_config(int argc, char **argv)
{
    ctl_args args;
    int rc = ctl_options_parse("config", argc, argv, NULL, config_usage, false, &args);
    if (rc >= 0)
        return rc;
    if (args.operand_count != 1 || strcmp(args.operands[0], "check") != 0) {
        ctl_error("config: expected 'check' (try virtflowctl config --help)");
        return CTL_EXIT_USAGE;
    }
    vf_error err;
    vf_error_init(&err);
    vf_config *config = config_resolve(args.config_path, &err);
    if (config && check_plugins(config, &err) < 0) {
        /* Plugin names and args are the engine's to know: checked as the
         * worker checks them at start-up. */
        char where[VF_ERROR_TEXT];
        snprintf(where, sizeof where, "%s", err.text);
        vf_error_init(&err);
        vf_error_set(&err, VF_ECONFIG, "%s%s%.*s", config->path ? config->path : "",
                     config->path ? ": " : "", (int)(sizeof where - 1), where);
        config_free(config);
        config = NULL;
    }
    if (!config) {
        if (args.json) {
            json_t *obj = json_pack("{s:b, s:s}", "ok", 0, "error", err.text);
            ctl_print_json(obj);
            json_decref(obj);
        }
        ctl_error("%s", err.text);
        return CTL_EXIT_CONFIG;
    }
    /* config_resolve refused the contradictions already: what is left are
     * the rules a program keeps longer or only warns of. */
    json_t *warnings = json_array();
    vf_error refused;
    vf_error_init(&refused);
    if (config_check_rules(config, NULL, collect_rule, warnings, &refused) < 0)
        ctl_error("%s", refused.text);
    const char *source = config->path ? config->path : "built-in defaults";
    if (args.json) {
        /* "environment": {key: variable} for what the variables set;
         * every other key is the file's, or its default. */
        json_t *from_env = json_object();
        for (size_t i = 0; i < config->n_env; i++)
            json_object_set_new(from_env, config->env_keys[i], json_string(config->env_names[i]));
        json_t *obj = json_pack("{s:b, s:o, s:o, s:O}", "ok", 1, "file",
                                config->path ? json_string(config->path) : json_null(),
                                "environment", from_env, "warnings", warnings);
        ctl_print_json(obj);
        json_decref(obj);
    } else {
        printf("ok: %s\n", ctl_text(source));
        for (size_t i = 0; i < config->n_env; i++)
            printf("  %s: from %s\n", ctl_text(config->env_keys[i]),
                   ctl_text(config->env_names[i]));
        size_t i;
        json_t *w;
        json_array_foreach(warnings, i, w)
        {
            const char *program = json_string_value(json_object_get(w, "program"));
            bool keeps = strcmp(json_string_value(json_object_get(w, "outcome")), "keeps") == 0;
            printf("warning%s%s%s: %s (%s; docs/configuration.md, \"Keys that must agree\")\n",
                   program ? " (" : "", program ? program : "", program ? ")" : "",
                   json_string_value(json_object_get(w, "why")),
                   keeps ? "kept longer" : "not refused");
        }
    }
    json_decref(warnings);
    config_free(config);
    return CTL_EXIT_OK;
}
