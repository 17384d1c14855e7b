/* virtflowctl: shared pieces of the command-line tool. Each command lives in
 * its own cmd_<name>.c and is listed once in main.c's table. */
#ifndef VF_CTL_H
#define VF_CTL_H

#include "config.h"

/* Exit statuses, the same for every command (documented in --help). */
enum {
    CTL_EXIT_OK = 0,
    CTL_EXIT_NEGATIVE = 1,   /* the answer is "no": not placed, bad signature, task failed */
    CTL_EXIT_USAGE = 2,      /* bad command line or bad request */
    CTL_EXIT_CONFIG = 3,     /* configuration could not be loaded */
    CTL_EXIT_UNAVAILABLE = 4 /* broker, store or inventory could not be reached */
};

typedef struct ctl_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
} ctl_command;

int ctl_place(int argc, char **argv);
int ctl_verify(int argc, char **argv);
int ctl_deliveries(int argc, char **argv);
int ctl_redeliver(int argc, char **argv);
int ctl_spares(int argc, char **argv);

/* Load the configuration named by -c (may be NULL: $VIRTFLOW_CONFIG, then
 * built-in defaults). Prints the error and returns NULL on failure. */
vf_config *ctl_load_config(const char *path);

/* Print "virtflowctl: <message>" to stderr. */
void ctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
