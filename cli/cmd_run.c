/*
 * cmd_run.c - `memflow run`: profile an unmodified program.
 *
 * The program runs with libmemflow-preload.so in LD_PRELOAD (CPU capture),
 * libmemflow-cuda.so as CUDA_INJECTION64_PATH (GPU capture, when built) and
 * the configuration passed as MEMFLOW_<KEY> variables; MEMFLOW_AUTOSTART=1
 * makes it record from before main().  Each process (forks, execs) writes
 * its own DIR/memflow-<pid>.mfl.  When the program ends, the logs it wrote
 * are rendered into DIR unless --no-render, then compacted
 * (cli/cmd_compact.c) unless --no-compact.  The exit status is the
 * program's own (128+N if signal N killed it).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "log_format.h"
#include "model.h"
#include "outputs.h"
#include "paths.h"

typedef struct run_options {
    const char *dir;
    int render;
    int compact;
    char **command;
} run_options;

static void run_usage(FILE *out)
{
    fputs("usage: memflow run [-o DIR] [--sample-rate N] [--set KEY=VALUE]... [--no-render]\n"
          "                   [--no-compact] -- CMD [ARGS...]\n"
          "\n"
          "Run CMD with every CPU allocation (and, with CUDA, GPU allocation) recorded\n"
          "into DIR/memflow-<pid>.mfl, then write memory_flow.svg, profile.json and\n"
          "stats.txt into DIR.  Exits with CMD's status (128+N if killed by signal N).\n"
          "\n"
          "  -o, --output DIR    output folder (default memflow-out)\n"
          "  --sample-rate N     occupancy snapshot every N alloc/free events per device\n"
          "  --set KEY=VALUE     any configuration key (see README); repeatable\n"
          "  --no-render         only write the log\n"
          "  --no-compact        leave the log in its live form (not compacted)\n"
          "  -h, --help          this text\n",
          out);
}

/* MEMFLOW_<KEY> for a configuration key. */
static void env_name(const char *key, size_t keylen, char *buf, size_t len)
{
    size_t at = (size_t)snprintf(buf, len, "MEMFLOW_");
    for (size_t i = 0; i < keylen && at + 1 < len; i++)
        buf[at++] = (char)toupper((unsigned char)key[i]);
    buf[at] = 0;
}

/* Check one KEY=VALUE and export it for the program. */
static int set_key(const char *pair)
{
    const char *eq = strchr(pair, '=');
    if (!eq || eq == pair) {
        fprintf(stderr, "memflow run: --set takes KEY=VALUE, got '%s'\n", pair);
        return -1;
    }
    char key[128], var[160], err[1024];
    snprintf(key, sizeof key, "%.*s", (int)(eq - pair), pair);
    const char *k = key, *v = eq + 1;
    if (mf_config_apply(1, &k, &v, "memflow run --set", err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    env_name(key, strlen(key), var, sizeof var);
    setenv(var, v, 1);
    return 0;
}

static int parse_options(int argc, char **argv, run_options *opt)
{
    opt->dir = "memflow-out";
    opt->render = 1;
    opt->compact = 1;
    opt->command = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            run_usage(stdout);
            exit(0);
        } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
            opt->dir = argv[++i];
        } else if (strcmp(a, "--sample-rate") == 0 && i + 1 < argc) {
            char pair[64];
            snprintf(pair, sizeof pair, "sample_rate=%s", argv[++i]);
            if (set_key(pair) < 0)
                return -1;
        } else if (strcmp(a, "--set") == 0 && i + 1 < argc) {
            if (set_key(argv[++i]) < 0)
                return -1;
        } else if (strcmp(a, "--no-render") == 0) {
            opt->render = 0;
        } else if (strcmp(a, "--no-compact") == 0) {
            opt->compact = 0;
        } else {
            fprintf(stderr, "memflow run: unknown or incomplete option '%s'\n", a);
            return -1;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "memflow run: no command to run (memflow run [OPTIONS] -- CMD)\n");
        return -1;
    }
    opt->command = argv + i;
    return 0;
}

/* Look for a plugin library next to the executable, then where installed. */
static int find_library(const char *name, char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *override = getenv("MEMFLOW_LIBDIR");
    if (override) {
        snprintf(out, len, "%s/%s", override, name);
        if (access(out, R_OK) == 0)
            return 0;
    }
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = 0;
        static const char *const rel[] = { "", "/.libs", "/../lib/memflow" };
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            int n_out = snprintf(out, len, "%s%s/%s", exe, rel[i], name);
            if (n_out > 0 && (size_t)n_out < len && access(out, R_OK) == 0)
                return 0;
        }
    }
    snprintf(out, len, "%s/%s", MEMFLOW_PKGLIBDIR, name);
    return access(out, R_OK) == 0 ? 0 : -1;
}

static int prepare_environment(const char *dir)
{
    char preload[PATH_MAX], cuda[PATH_MAX], err[1024];
    if (mf_config_apply_env(err, sizeof err) < 0) {
        fprintf(stderr, "memflow run: %s\n", err);
        return -1;
    }
    if (find_library("libmemflow-preload.so", preload, sizeof preload) < 0) {
        fprintf(stderr, "memflow run: cannot find libmemflow-preload.so (looked next to the "
                "memflow executable and in %s); set MEMFLOW_LIBDIR\n", MEMFLOW_PKGLIBDIR);
        return -1;
    }
    const char *old = getenv("LD_PRELOAD");
    if (old && *old) {
        char joined[PATH_MAX * 2];
        snprintf(joined, sizeof joined, "%s:%s", preload, old);
        setenv("LD_PRELOAD", joined, 1);
    } else {
        setenv("LD_PRELOAD", preload, 1);
    }
    if (!getenv("CUDA_INJECTION64_PATH") &&
        find_library("libmemflow-cuda.so", cuda, sizeof cuda) == 0)
        setenv("CUDA_INJECTION64_PATH", cuda, 1);
    setenv("MEMFLOW_PATH", dir, 1);
    setenv("MEMFLOW_AUTOSTART", "1", 1);
    return 0;
}

/* mkdir -p DIR and return its absolute path in out. */
static int output_dir(const char *dir, char *out, size_t len)
{
    char err[1024], resolved[PATH_MAX];
    if (mf_make_dirs(dir, err, sizeof err) < 0) {
        fprintf(stderr, "memflow run: output folder: %s\n", err);
        return -1;
    }
    if (!realpath(dir, resolved) || access(resolved, W_OK) != 0) {
        fprintf(stderr, "memflow run: output folder '%s' is not writable: %s\n", dir,
                strerror(errno ? errno : EACCES));
        return -1;
    }
    snprintf(out, len, "%s", resolved);
    return 0;
}

/* Run the command; returns its exit status in the shell's convention. */
static int run_program(char **command)
{
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "memflow run: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execvp(command[0], command);
        fprintf(stderr, "memflow run: cannot run '%s': %s\n", command[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    /* Like time(1): Ctrl-C and Ctrl-\ are for the program, not for us. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "memflow run: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* Whether path is a memflow log that started at or after since_real_ns. */
static int log_of_this_run(const char *path, uint64_t since_real_ns)
{
    mf_file_header h;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, &h, sizeof h);
    close(fd);
    return n == (ssize_t)sizeof h && memcmp(h.magic, MF_LOG_MAGIC, 8) == 0 &&
           h.start_real_ns >= since_real_ns;
}

static int is_log_name(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "memflow-", 8) == 0 && n > 12 && strcmp(name + n - 4, ".mfl") == 0;
}

/* Collect DIR's logs written by this run (malloc'd array of paths). */
static char **find_logs(const char *dir, uint64_t since_real_ns, int *count)
{
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **paths = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_log_name(e->d_name))
            continue;
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof path || !log_of_this_run(path, since_real_ns))
            continue;
        char **grown = realloc(paths, (size_t)(*count + 1) * sizeof *paths);
        if (!grown)
            break;
        paths = grown;
        paths[(*count)++] = strdup(path);
    }
    closedir(d);
    return paths;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int render_logs(const char *dir, int n, char **paths)
{
    mf_model *model = cli_load_model(n, paths, UINT64_MAX);
    if (!model)
        return -1;
    const mf_config *c = mf_config_get();
    char formats[1200];
    mf_outputs_formats_for(model, c->formats, formats, sizeof formats);
    mf_output_options out = {
        .formats = formats,
        .trace_name = c->filename,
        .csv_prefix = c->gpu_memory_profile_filename_prefix,
        .svg = { .color_by = MF_COLOR_BY_SCOPE, .only_device = -1, .title = NULL },
        .progress = isatty(2),
    };
    char err[1024];
    int rc = mf_outputs_write(model, dir, &out, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "memflow run: %s\n", err);
    else
        fprintf(stderr, "memflow: %d log%s rendered into %s (%s)\n", n, n == 1 ? "" : "s",
                dir, formats);
    mf_model_free(model);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_options opt;
    char dir[PATH_MAX];
    if (parse_options(argc, argv, &opt) < 0)
        return 2;
    if (output_dir(opt.dir, dir, sizeof dir) < 0 || prepare_environment(dir) < 0)
        return 1;
    uint64_t started = realtime_ns();
    int status = run_program(opt.command);
    int n;
    char **logs = find_logs(dir, started, &n);
    if (n == 0) {
        fprintf(stderr, "memflow run: '%s' wrote no log into %s (a statically linked "
                "program cannot be profiled through LD_PRELOAD)\n", opt.command[0], dir);
        return status ? status : 1;
    }
    int render_failed = opt.render && render_logs(dir, n, logs) < 0;
    if (opt.compact)
        cli_compact_run_logs(n, logs);
    for (int i = 0; i < n; i++)
        free(logs[i]);
    free(logs);
    if (status == 0 && render_failed)
        return 1;
    return status;
}
