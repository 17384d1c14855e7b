/* program: the start the three daemons (virtflow-worker, virtflow-relay,
 * virtflow-api) share, from the command line to the moment the program's
 * own work begins. virtflowctl has commands and options of its own. */
#ifndef VF_PROGRAM_H
#define VF_PROGRAM_H

#include <signal.h>

#include "config.h"

/* The exit statuses of the daemons, as their --help says. */
enum {
    PROGRAM_EXIT_OK = 0,     /* stopped by SIGTERM/SIGINT, or --help, --version */
    PROGRAM_EXIT_FAILED = 1, /* a runtime failure */
    PROGRAM_EXIT_USAGE = 2,  /* a bad command line */
    PROGRAM_EXIT_CONFIG = 3, /* no usable configuration */
};

/* What SIGHUP does (hangup.h). */
typedef enum {
    PROGRAM_NOTES_HANGUP, /* logs that nothing was reloaded */
    PROGRAM_RELOADS,      /* asks for a reload: the program polls hangup_take() */
} program_hangup;

/* Set (to 1) by SIGTERM or SIGINT once program_start has returned a
 * configuration; the program's loop stops when it sees it. */
extern volatile sig_atomic_t program_stop_requested;

/* Names the program in the log (`name`, e.g. "virtflow-worker"); reads the
 * command line: -c FILE (--config FILE), --defaults, -h (--help: prints
 * `usage` to stdout), --version; resolves the configuration (-c, else
 * $VIRTFLOW_CONFIG, else CONFIG_SYSTEM_PATH when it exists) and refuses the
 * built-in defaults unless --defaults asks for them; applies log.level and
 * log.format; starts SIGHUP's thread (`hangup`, hangup.h) and libcurl; makes SIGTERM
 * and SIGINT set program_stop_requested and ignores SIGPIPE. Call it first,
 * before any thread starts.
 * Returns the configuration (owned: config_free), or NULL with *exit_status
 * set to what main returns, the reason printed or logged: PROGRAM_EXIT_OK
 * after --help or --version, PROGRAM_EXIT_USAGE, PROGRAM_EXIT_CONFIG or
 * PROGRAM_EXIT_FAILED. */
vf_config *program_start(const char *name, const char *usage, program_hangup hangup, int argc,
                         char **argv, int *exit_status) __attribute__((warn_unused_result));

#endif
