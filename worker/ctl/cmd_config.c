/* virtflowctl config check: load the configuration the programs would load,
 * with the same loader and checks, and say whether it is good (nginx -t). */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static void config_usage(FILE *out)
{
    fprintf(out, "usage: virtflowctl config check [-c CONFIG] [--json]\n"
                 "\n"
                 "Load and check the configuration with the loader virtflow-worker and\n"
                 "virtflow-relay use (-c FILE, else $VIRTFLOW_CONFIG, else\n"
                 "/etc/virtflow/config.yaml when it exists, else built-in defaults) and print\n"
                 "\"ok\" and the file, or the error (file, line, key). Reads no secret and\n"
                 "reaches no broker or store.\n"
                 "\n"
                 "exit status: 0 valid, 2 usage, 3 invalid or unreadable.\n");
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
    if (!config) {
        if (args.json) {
            json_t *obj = json_pack("{s:b, s:s}", "ok", 0, "error", err.text);
            ctl_print_json(obj);
            json_decref(obj);
        }
        ctl_error("%s", err.text);
        return CTL_EXIT_CONFIG;
    }
    const char *source = config->path ? config->path : "built-in defaults";
    if (args.json) {
        json_t *obj = json_pack("{s:b, s:o}", "ok", 1, "file",
                                config->path ? json_string(config->path) : json_null());
        ctl_print_json(obj);
        json_decref(obj);
    } else {
        printf("ok: %s\n", ctl_text(source));
    }
    config_free(config);
    return CTL_EXIT_OK;
}
