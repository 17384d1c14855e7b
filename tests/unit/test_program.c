/* program: the daemons' shared start answers the command line with the exit
 * statuses docs/operations.md lists, and hands over a configuration only
 * when there is one to run on. */
#include "program.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define VALID "fixtures/config/valid/full.yaml"

static const char usage[] = "usage: test_program [-c FILE | --defaults]\n";

/* program_start on a command line of up to three words; *status as it set it. */
static vf_config *start(int *status, const char *a, const char *b, const char *c)
{
    char *argv[] = {(char *)"test_program", (char *)a, (char *)b, (char *)c, NULL};
    int argc = 1;
    while (argc < 4 && argv[argc])
        argc++;
    argv[argc] = NULL;
    *status = -1;
    return program_start("test_program", usage, PROGRAM_NOTES_HANGUP, argc, argv, status);
}

static void test_help_and_version_exit_zero(void)
{
    int status;
    CHECK(!start(&status, "--help", NULL, NULL) && status == PROGRAM_EXIT_OK);
    CHECK(!start(&status, "-h", NULL, NULL) && status == PROGRAM_EXIT_OK);
    CHECK(!start(&status, "--version", NULL, NULL) && status == PROGRAM_EXIT_OK);
}

static void test_bad_command_lines_exit_two(void)
{
    int status;
    CHECK(!start(&status, "--nonsense", NULL, NULL) && status == PROGRAM_EXIT_USAGE);
    CHECK(!start(&status, "stray", NULL, NULL) && status == PROGRAM_EXIT_USAGE);
    CHECK(!start(&status, "-c", NULL, NULL) && status == PROGRAM_EXIT_USAGE);
}

static void test_no_usable_configuration_exits_three(void)
{
    int status;
    CHECK(!start(&status, "-c", "fixtures/config/absent.yaml", NULL) &&
          status == PROGRAM_EXIT_CONFIG);
    /* A broken file is refused even with --defaults. */
    CHECK(!start(&status, "--defaults", "-c", "fixtures/config/absent.yaml") &&
          status == PROGRAM_EXIT_CONFIG);
}

static void test_a_configuration_is_handed_over(void)
{
    int status;
    vf_config *config = start(&status, "-c", VALID, NULL);
    CHECKF(config != NULL, "-c %s: status %d", VALID, status);
    if (config)
        CHECK_STR(config->path, VALID);
    config_free(config);
    config = start(&status, "--config", VALID, NULL);
    CHECK(config != NULL);
    config_free(config);
    /* No file anywhere: the built-in defaults only when asked for. */
    setenv("VIRTFLOW_CONFIG", "", 1);
    config = start(&status, "--defaults", NULL, NULL);
    CHECK(config != NULL);
    if (config && access(CONFIG_SYSTEM_PATH, F_OK) != 0)
        CHECK(config->path == NULL);
    config_free(config);
}

static void test_stop_signals_set_the_flag(void)
{
    int status;
    vf_config *config = start(&status, "-c", VALID, NULL);
    CHECK(config != NULL);
    CHECK(program_stop_requested == 0);
    raise(SIGTERM); /* would end the test, were it not handled */
    CHECK(program_stop_requested == 1);
    program_stop_requested = 0;
    raise(SIGINT);
    CHECK(program_stop_requested == 1);
    config_free(config);
}

int main(void)
{
    test_help_and_version_exit_zero();
    test_bad_command_lines_exit_two();
    test_no_usable_configuration_exits_three();
    test_a_configuration_is_handed_over();
    test_stop_signals_set_the_flag();
    return test_summary();
}
