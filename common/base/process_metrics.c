/* process_metrics: see process_metrics.h. The values are the ones the
 * Prometheus client libraries export under the same names (their
 * "process collector"), read the same way from procfs: proc(5). */
#include "process_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "version.h"

/* The fields of /proc/self/stat this needs; 0 when the file cannot be read. */
typedef struct proc_stat {
    unsigned long long utime, stime; /* clock ticks */
    unsigned long long starttime;    /* clock ticks after boot */
} proc_stat;

static int read_stat(proc_stat *out)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields that follow start after its last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* After ')': state (3), then fields 4..; utime is 14, stime 15, starttime 22. */
    unsigned long long field[20];
    char state;
    int got = sscanf(p + 1,
                     " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                     "%llu %llu %llu %llu %llu",
                     &state, &field[0], &field[1], &field[2], &field[3], &field[4], &field[5],
                     &field[6], &field[7], &field[8], &field[9], &field[10], &field[11], &field[12],
                     &field[13], &field[14], &field[15], &field[16], &field[17], &field[18]);
    if (got < 20)
        return -1;
    out->utime = field[10];     /* field 14 */
    out->stime = field[11];     /* field 15 */
    out->starttime = field[18]; /* field 22 */
    return 0;
}

/* Boot time, Unix seconds (btime in /proc/stat); -1 when unknown. */
static double boot_time(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[256];
    double btime = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "btime ", 6) == 0) {
            btime = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    return btime;
}

static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static long resident_pages(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    long size = 0, resident = -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident;
}

int process_metrics_define(metrics *m, process_metrics *pm, vf_error *err)
{
    memset(pm, 0, sizeof *pm);
    pm->cpu_seconds = metrics_series_only(metrics_family_add(
        m, METRICS_COUNTER, "process_cpu_seconds_total",
        "Total user and system CPU time spent in seconds", 0, NULL, NULL, 0, err));
    pm->resident = metrics_series_only(
        metrics_family_add(m, METRICS_GAUGE, "process_resident_memory_bytes",
                           "Resident memory size in bytes", 0, NULL, NULL, 0, err));
    pm->open_fds = metrics_series_only(metrics_family_add(m, METRICS_GAUGE, "process_open_fds",
                                                          "Number of open file descriptors", 0,
                                                          NULL, NULL, 0, err));
    pm->max_fds = metrics_series_only(metrics_family_add(m, METRICS_GAUGE, "process_max_fds",
                                                         "Maximum number of open file descriptors",
                                                         0, NULL, NULL, 0, err));
    pm->start_time = metrics_series_only(metrics_family_add(
        m, METRICS_GAUGE, "process_start_time_seconds",
        "Start time of the process since unix epoch in seconds", 0, NULL, NULL, 0, err));
    const char *build_labels[] = {"version", "commit"};
    metrics_family *build = metrics_family_add(
        m, METRICS_GAUGE, "virtflow_build_info",
        "Always 1; the labels say which build runs (project version, git commit or \"\")", 2,
        build_labels, NULL, 0, err);
    const char *build_values[] = {vf_version(), vf_version_commit()};
    metrics_series *info = metrics_series_get(build, build_values);
    if (!pm->cpu_seconds || !pm->resident || !pm->open_fds || !pm->max_fds || !pm->start_time ||
        !info) {
        if (err->code == VF_OK)
            vf_error_set(err, VF_ENOMEM, "out of memory defining process metrics");
        return -1;
    }
    metrics_set(info, 1);
    /* Fixed for the process's life: read once. */
    proc_stat st;
    long ticks = sysconf(_SC_CLK_TCK);
    double boot = boot_time();
    if (ticks > 0 && boot >= 0 && read_stat(&st) == 0)
        metrics_set(pm->start_time, boot + (double)st.starttime / (double)ticks);
    return 0;
}

void process_metrics_collect(const process_metrics *pm)
{
    proc_stat st;
    long ticks = sysconf(_SC_CLK_TCK);
    if (ticks > 0 && read_stat(&st) == 0)
        metrics_set(pm->cpu_seconds, (double)(st.utime + st.stime) / (double)ticks);
    long pages = resident_pages();
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages >= 0 && page_size > 0)
        metrics_set(pm->resident, (double)pages * (double)page_size);
    long fds = open_fds();
    if (fds >= 0)
        metrics_set(pm->open_fds, (double)fds);
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
        metrics_set(pm->max_fds, limit.rlim_cur == RLIM_INFINITY ? -1 : (double)limit.rlim_cur);
}
