#include "spare_provision.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "clock.h"
#include "http.h"
#include "spare_awx.h"
#include "spare_kube.h"
#include "spare_status.h"

extern char **environ;

#define TOKEN_MAX 4096

/* The first line of a token file, without trailing whitespace. */
static int read_token(const char *path, const char *what, char *buf, size_t size, vf_error *err)
{
    if (!path) {
        vf_error_set(err, VF_ECONFIG, "%s is not set", what);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        int saved = errno;
        vf_error_set(err, VF_ECONFIG, "%s %s: %s", what, path, strerror(saved));
        return -1;
    }
    size_t len = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[len] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    len = strlen(buf);
    while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        buf[--len] = '\0';
    if (len == 0) {
        vf_error_set(err, VF_ECONFIG, "%s %s is empty", what, path);
        return -1;
    }
    return 0;
}

static void format_numbers(const spare_target *t, char vmid[24], char cpu[24], char memory[24],
                           char disk[24])
{
    snprintf(vmid, 24, "%lld", (long long)t->vmid);
    snprintf(cpu, 24, "%g", t->cpu);
    snprintf(memory, 24, "%lld", (long long)t->memory);
    snprintf(disk, 24, "%lld", (long long)t->disk);
}

void spare_idempotency_key(const char *task_id, const char *name, const char *created_at,
                           const char *action, char out[SPARE_IDEMPOTENCY_KEY_SIZE])
{
    if (!created_at)
        created_at = "";
    /* NUL-separated, so ("a:b", "c") and ("a", "b:c") differ. */
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(md, task_id, strlen(task_id) + 1) == 1 &&
              EVP_DigestUpdate(md, name, strlen(name) + 1) == 1 &&
              EVP_DigestUpdate(md, created_at, strlen(created_at) + 1) == 1 &&
              EVP_DigestUpdate(md, action, strlen(action) + 1) == 1 &&
              EVP_DigestFinal_ex(md, digest, &length) == 1 && length >= 16;
    EVP_MD_CTX_free(md);
    if (!ok)
        memset(digest, 0, 16); /* unreachable in practice; still one key per step */
    int at = snprintf(out, SPARE_IDEMPOTENCY_KEY_SIZE, "vf1-");
    for (int i = 0; i < 16; i++)
        at += snprintf(out + at, (size_t)(SPARE_IDEMPOTENCY_KEY_SIZE - at), "%02x", digest[i]);
}

/* ---- gitlab ---- */

static int run_gitlab(const vf_config *config, const spare_target *t, const char *action,
                      spare_provision_result *out, vf_error *err)
{
    if (!config->spare.provisioner.url || !config->spare.provisioner.project) {
        vf_error_set(err, VF_ECONFIG, "spare.provisioner: gitlab needs url and project");
        return -1;
    }
    char token[TOKEN_MAX];
    if (read_token(config->spare.provisioner.token_file, "spare.provisioner.token_file", token,
                   sizeof token, err) < 0)
        return -1;
    /* A project may be given by path (group/name): it is one URL segment. */
    char *project = curl_escape(config->spare.provisioner.project, 0);
    if (!project) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char url[2048];
    size_t base = strlen(config->spare.provisioner.url);
    while (base > 0 && config->spare.provisioner.url[base - 1] == '/')
        base--;
    snprintf(url, sizeof url, "%.*s/api/v4/projects/%s/trigger/pipeline", (int)base,
             config->spare.provisioner.url, project);
    curl_free(project);
    char vmid[24], cpu[24], memory[24], disk[24];
    format_numbers(t, vmid, cpu, memory, disk);
    http_form_field fields[] = {
        {"token", token},
        {"ref", config->spare.provisioner.ref ? config->spare.provisioner.ref : "main"},
        {"variables[VM_NAME]", t->name},
        {"variables[HOST]", t->host},
        {"variables[HOST_IP]", t->host_ip ? t->host_ip : ""},
        {"variables[VMID]", vmid},
        {"variables[CPU]", cpu},
        {"variables[MEMORY]", memory},
        {"variables[DISK]", disk},
        {"variables[CLUSTER]", t->cluster ? t->cluster : ""},
        {"variables[UPGRADE_ID]", t->upgrade_id},
        {"variables[ACTION]", action},
        {"variables[IDEMPOTENCY_KEY]", t->idempotency_key ? t->idempotency_key : ""},
    };
    http_request req = {.url = url, .timeout_s = config->spare.provisioner.timeout_s};
    http_response resp;
    int rc = http_post_form(&req, fields, sizeof fields / sizeof fields[0], &resp, err);
    memset(token, 0, sizeof token);
    if (rc < 0)
        return -1;
    rc = -1;
    if (resp.status != 201 && resp.status != 200) {
        /* GitLab explains a refusal in {"message": ...}; quote a little of it. */
        vf_error_set(err, VF_EUNAVAILABLE, "gitlab pipeline trigger answered HTTP %ld: %.160s",
                     resp.status, resp.body);
        goto out;
    }
    json_t *body = json_loadb(resp.body, resp.body_len, 0, NULL);
    json_t *id = json_object_get(body, "id");
    const char *web_url = json_string_value(json_object_get(body, "web_url"));
    if (!json_is_integer(id)) {
        vf_error_set(err, VF_EUNAVAILABLE,
                     "gitlab pipeline trigger answered HTTP %ld without a pipeline id",
                     resp.status);
    } else {
        out->pipeline_id = (int64_t)json_integer_value(id);
        snprintf(out->pipeline_url, sizeof out->pipeline_url, "%s", web_url ? web_url : "");
        rc = 0;
    }
    json_decref(body);
out:
    http_response_close(&resp);
    return rc;
}

/* ---- awx (spare_awx.c) ---- */

static int run_awx(const vf_config *config, const spare_target *t, const char *action,
                   spare_provision_result *out, vf_error *err)
{
    char token[TOKEN_MAX];
    if (read_token(config->spare.provisioner.token_file, "spare.provisioner.token_file", token,
                   sizeof token, err) < 0)
        return -1;
    int rc = spare_awx_launch(config, t, action, token, out, err);
    memset(token, 0, sizeof token);
    return rc;
}

/* ---- command ---- */

static const char *const command_vars[] = {
    "VIRTFLOW_VM_NAME",    "VIRTFLOW_HOST",   "VIRTFLOW_HOST_IP",        "VIRTFLOW_VMID",
    "VIRTFLOW_CPU",        "VIRTFLOW_MEMORY", "VIRTFLOW_DISK",           "VIRTFLOW_CLUSTER",
    "VIRTFLOW_UPGRADE_ID", "VIRTFLOW_ACTION", "VIRTFLOW_IDEMPOTENCY_KEY"};
enum { N_COMMAND_VARS = sizeof command_vars / sizeof command_vars[0] };

/* The command's environment into *envp: the worker's own without any of
 * command_vars, then command_vars set for `t` and `action` (their text in
 * storage[]). *envp and storage[] are the caller's to free, also on
 * failure. 0, or -1 with err. */
static int command_environment(const spare_target *t, const char *action, char ***envp,
                               char *storage[N_COMMAND_VARS], vf_error *err)
{
    char vmid[24], cpu[24], memory[24], disk[24];
    format_numbers(t, vmid, cpu, memory, disk);
    const char *values[N_COMMAND_VARS] = {t->name,
                                          t->host,
                                          t->host_ip ? t->host_ip : "",
                                          vmid,
                                          cpu,
                                          memory,
                                          disk,
                                          t->cluster ? t->cluster : "",
                                          t->upgrade_id,
                                          action,
                                          t->idempotency_key ? t->idempotency_key : ""};
    size_t n_env = 0;
    while (environ && environ[n_env])
        n_env++;
    char **env = *envp = calloc(n_env + N_COMMAND_VARS + 1, sizeof *env);
    if (!env)
        goto oom;
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        bool ours = false;
        for (size_t v = 0; v < N_COMMAND_VARS && !ours; v++) {
            size_t len = strlen(command_vars[v]);
            ours = strncmp(environ[i], command_vars[v], len) == 0 && environ[i][len] == '=';
        }
        if (!ours)
            env[k++] = environ[i];
    }
    for (size_t v = 0; v < N_COMMAND_VARS; v++) {
        size_t len = strlen(command_vars[v]) + strlen(values[v]) + 2;
        if (!(storage[v] = malloc(len)))
            goto oom;
        snprintf(storage[v], len, "%s=%s", command_vars[v], values[v]);
        env[k++] = storage[v];
    }
    return 0;
oom:
    vf_error_set(err, VF_ENOMEM, "out of memory starting the provisioner");
    return -1;
}

/* Start argv in its own process group, so a timeout kills whatever it
 * started too, stdin from /dev/null. 0 with *pid, or -1 with err. */
static int spawn_command(char **argv, char **envp, pid_t *pid, vf_error *err)
{
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    int spawned = posix_spawnp(pid, argv[0], &actions, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        vf_error_set(err, VF_EUNAVAILABLE, "provisioner %s: cannot start: %s", argv[0],
                     strerror(spawned));
        return -1;
    }
    return 0;
}

/* Wait for `pid` (the command `name`) to end, into *status; past
 * `timeout_s` or a shutdown (*stop), its process group is killed. 0, or -1
 * with err. */
static int wait_command(pid_t pid, const char *name, int timeout_s,
                        volatile const sig_atomic_t *stop, int *status, vf_error *err)
{
    int64_t deadline = clock_mono_ms() + (int64_t)timeout_s * 1000;
    for (;;) {
        pid_t done = waitpid(pid, status, WNOHANG);
        if (done == pid)
            return 0;
        if (done < 0 && errno != EINTR) {
            int saved = errno;
            vf_error_set(err, VF_EINTERNAL, "provisioner %s: waitpid: %s", name, strerror(saved));
            return -1;
        }
        bool interrupted = stop && *stop;
        if (interrupted || clock_mono_ms() >= deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
            if (interrupted)
                vf_error_set(err, VF_EINTERNAL, "provisioner %s: interrupted by shutdown", name);
            else
                vf_error_set(err, VF_EUNAVAILABLE,
                             "provisioner %s: no result within %d s (process group killed)", name,
                             timeout_s);
            return -1;
        }
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

static int run_command(const vf_config *config, const spare_target *t, const char *action,
                       volatile const sig_atomic_t *stop, vf_error *err)
{
    if (config->spare.provisioner.n_command == 0) {
        vf_error_set(err, VF_ECONFIG, "spare.provisioner: command needs an argv");
        return -1;
    }
    int rc = -1;
    char **envp = NULL;
    char *storage[N_COMMAND_VARS] = {0};
    char **argv = calloc(config->spare.provisioner.n_command + 1, sizeof *argv);
    if (!argv) {
        vf_error_set(err, VF_ENOMEM, "out of memory starting the provisioner");
        goto out;
    }
    for (size_t i = 0; i < config->spare.provisioner.n_command; i++)
        argv[i] = config->spare.provisioner.command[i];
    pid_t pid;
    int status = 0;
    if (command_environment(t, action, &envp, storage, err) < 0 ||
        spawn_command(argv, envp, &pid, err) < 0 ||
        wait_command(pid, argv[0], config->spare.provisioner.timeout_s, stop, &status, err) < 0)
        goto out;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        rc = 0;
    else if (WIFEXITED(status))
        vf_error_set(err, VF_EUNAVAILABLE, "provisioner %s exited with status %d", argv[0],
                     WEXITSTATUS(status));
    else
        vf_error_set(err, VF_EUNAVAILABLE, "provisioner %s killed by signal %d", argv[0],
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
out:
    for (size_t v = 0; v < N_COMMAND_VARS; v++)
        free(storage[v]);
    free(envp);
    free(argv);
    return rc;
}

int spare_provision_run(const vf_config *config, const spare_target *target, const char *action,
                        volatile const sig_atomic_t *stop, spare_provision_result *out,
                        vf_error *err)
{
    out->pipeline_id = -1;
    out->pipeline_url[0] = '\0';
    const char *type = config->spare.provisioner.type ? config->spare.provisioner.type : "none";
    if (strcmp(type, "none") == 0)
        return 0;
    if (strcmp(type, "gitlab") == 0)
        return run_gitlab(config, target, action, out, err);
    if (strcmp(type, "awx") == 0)
        return run_awx(config, target, action, out, err);
    if (strcmp(type, "command") == 0)
        return run_command(config, target, action, stop, err);
    vf_error_set(err, VF_ECONFIG, "spare.provisioner.type: unknown type %s", type);
    return -1;
}

int spare_readiness_check(const vf_config *config, const char *cluster, const char *name, char *why,
                          size_t size)
{
    if (!config->spare.readiness.type || strcmp(config->spare.readiness.type, "kubernetes") != 0) {
        snprintf(why, size, "no readiness check configured");
        return 1;
    }
    vf_error err;
    vf_error_init(&err);
    spare_kube_api api;
    if (spare_kube_api_for(config, cluster, &api, &err) < 0) {
        snprintf(why, size, "%s", err.text);
        return 0;
    }
    return spare_kube_ready(&api, config->spare.readiness.poll_s, name, why, size);
}

int spare_pipeline_status(const vf_config *config, int64_t pipeline_id, char *status, size_t size,
                          vf_error *err)
{
    if (config->spare.provisioner.type && strcmp(config->spare.provisioner.type, "awx") == 0) {
        char awx_token[TOKEN_MAX];
        if (read_token(config->spare.provisioner.token_file, "spare.provisioner.token_file",
                       awx_token, sizeof awx_token, err) < 0)
            return -1;
        int awx_rc = spare_awx_job_status(config, pipeline_id, awx_token, status, size, err);
        memset(awx_token, 0, sizeof awx_token);
        return awx_rc;
    }
    if (!config->spare.provisioner.url || !config->spare.provisioner.project) {
        vf_error_set(err, VF_ECONFIG, "spare.provisioner: gitlab needs url and project");
        return -1;
    }
    /* A trigger token cannot read pipelines: that takes a token with
     * read_api. Without one the request goes unauthenticated, which a public
     * project answers. */
    char token[TOKEN_MAX] = "";
    if (config->spare.provisioner.api_token_file &&
        read_token(config->spare.provisioner.api_token_file, "spare.provisioner.api_token_file",
                   token, sizeof token, err) < 0)
        return -1;
    char header[TOKEN_MAX + 32];
    snprintf(header, sizeof header, "PRIVATE-TOKEN: %s", token);
    bool authenticated = token[0] != '\0';
    memset(token, 0, sizeof token);
    char *project = curl_escape(config->spare.provisioner.project, 0);
    if (!project) {
        vf_error_set(err, VF_ENOMEM, "out of memory");
        return -1;
    }
    char url[2048];
    size_t base = strlen(config->spare.provisioner.url);
    while (base > 0 && config->spare.provisioner.url[base - 1] == '/')
        base--;
    snprintf(url, sizeof url, "%.*s/api/v4/projects/%s/pipelines/%lld", (int)base,
             config->spare.provisioner.url, project, (long long)pipeline_id);
    curl_free(project);
    char what[48];
    snprintf(what, sizeof what, "gitlab pipeline %lld", (long long)pipeline_id);
    spare_status_request req = {
        .url = url,
        .authorization = authenticated ? header : NULL,
        .what = what,
        .refused = {401, 404},
        .refused_hint = " (spare.provisioner.api_token_file needs a token with read_api)"};
    int rc = spare_status_get(&req, status, size, err);
    memset(header, 0, sizeof header);
    return rc;
}
