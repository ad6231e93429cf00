/*
 * cmd_run.c - `memflow run`: profile an unmodified program.
 *
 * The program runs with libmemflow-preload.so in LD_PRELOAD (CPU capture),
 * libmemflow-cuda.so as CUDA_INJECTION64_PATH (GPU capture, when built and
 * the cupti key is on),
 * libmemflow-nvtx.so as NVTX_INJECTION64_PATH (NVTX ranges as scopes),
 * the configuration as MEMFLOW_<KEY> variables, MEMFLOW_AUTOSTART=1 (record
 * from before main()) and MEMFLOW_RUN_ID, a fresh random id that every
 * process of the run writes into its log header, and, unless
 * MEMFLOW_STAGE=0 says no, MEMFLOW_STAGE, the staging file through which the
 * process it starts hands its log chunks to memflow run to write
 * (cli/run_stage.c).  Each process (forks, execs)
 * writes its own DIR/memflow-<pid>.mfl; when the program ends,
 * exactly the logs with this run's id are rendered into DIR unless
 * --no-render and compacted (cli/cmd_compact.c, on a second core beside
 * the rendering) unless --no-compact: the chunks of the staged log that
 * were final while the program ran already are (cli/run_compact.c).
 * Signals memflow gets go to the program (cli/run_child.c).
 *
 * Exit status: the program's own (128+N if signal N killed it); before the
 * program runs, memflow's own failures are 125, a command that cannot be
 * executed 126, one that does not exist 127 (as env and timeout).  After a
 * program that exited 0, a failure of memflow's own (no log, rendering)
 * is 1.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "model.h"
#include "monotonic.h"
#include "outputs.h"
#include "paths.h"
#include "python_env.h"
#include "run.h"

typedef struct run_options {
    const char *dir;        /* -o DIR */
    const char *set_path;   /* --set path=DIR */
    int render;
    int compact;
    char **command;
} run_options;

static void run_usage(FILE *out)
{
    fputs("usage: memflow run [-o DIR] [--sample-rate N] [--stacks[=DEPTH]] [--set KEY=VALUE]...\n"
          "                   [--no-render] [--no-compact] -- CMD [ARGS...]\n"
          "\n"
          "Run CMD with every CPU allocation (and, with CUDA, GPU allocation) recorded\n"
          "into DIR/memflow-<pid>.mfl, then write memory_flow.svg, profile.json and\n"
          "stats.txt into DIR from the logs of this run.  SIGTERM, SIGINT, SIGHUP and\n"
          "SIGQUIT sent to memflow go to CMD.\n"
          "\n"
          "  -o, --output DIR    output folder (default: MEMFLOW_PATH, else memflow-out)\n"
          "  --sample-rate N     occupancy snapshot every N alloc/free events per device\n"
          "  --stacks[=DEPTH]    record each allocation's call stack, DEPTH frames (default\n"
          "                      64, at most 256); the key `stacks`\n"
          "  --set KEY=VALUE     any configuration key (see README); repeatable\n"
          "  --no-render         only write the log\n"
          "  --no-compact        leave the log in its live form (not compacted)\n"
          "  -h, --help          this text\n"
          "\n"
          "Exit status: CMD's (128+N if signal N killed it); 125 memflow's own error\n"
          "before CMD ran, 126 CMD cannot be executed, 127 CMD not found.\n",
          out);
}

/* Check one KEY=VALUE and export it for the program (path: the folder). */
static int set_key(const char *pair, run_options *opt)
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
    if (strcmp(key, "path") == 0)
        opt->set_path = v;
    mf_config_variable(key, var, sizeof var);
    setenv(var, v, 1);
    return 0;
}

/* The output folder: -o, --set path=, MEMFLOW_PATH, memflow-out; -o and
 * --set path= naming different folders is an error. */
static int choose_dir(run_options *opt)
{
    if (opt->dir && opt->set_path && strcmp(opt->dir, opt->set_path) != 0) {
        fprintf(stderr, "memflow run: -o '%s' and --set path='%s' name different output "
                "folders; give one\n", opt->dir, opt->set_path);
        return -1;
    }
    if (!opt->dir)
        opt->dir = opt->set_path;
    if (!opt->dir)
        opt->dir = getenv("MEMFLOW_PATH");
    if (!opt->dir || !*opt->dir)
        opt->dir = "memflow-out";
    return 0;
}

static int parse_options(int argc, char **argv, run_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->render = 1;
    opt->compact = 1;
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
            if (set_key(pair, opt) < 0)
                return -1;
        } else if (strcmp(a, "--stacks") == 0 || strncmp(a, "--stacks=", 9) == 0) {
            char pair[64];
            snprintf(pair, sizeof pair, "stacks=%.40s", a[8] ? a + 9 : "64");
            if (set_key(pair, opt) < 0)
                return -1;
        } else if (strcmp(a, "--set") == 0 && i + 1 < argc) {
            if (set_key(argv[++i], opt) < 0)
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
    return choose_dir(opt);
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

/* NVTX ranges become scopes through memflow's NVTX injection library,
 * unless the user's NVTX_INJECTION64_PATH (another tool's) stays. */
static void set_nvtx_injection(void)
{
    char nvtx[PATH_MAX];
    const char *mine = getenv("NVTX_INJECTION64_PATH");
    if (mine && *mine)
        fprintf(stderr, "memflow run: NVTX_INJECTION64_PATH is set (%s): kept, so NVTX "
                "ranges do not become memflow scopes\n", mine);
    else if (find_library("libmemflow-nvtx.so", nvtx, sizeof nvtx) == 0)
        setenv("NVTX_INJECTION64_PATH", nvtx, 1);
}

/* Put value in front of the list variable var (separator sep). */
static void prepend(const char *var, const char *value, char sep)
{
    const char *old = getenv(var);
    if (!old || !*old) {
        setenv(var, value, 1);
        return;
    }
    size_t len = strlen(value) + strlen(old) + 2;
    char *joined = malloc(len);
    if (!joined)
        return;
    snprintf(joined, len, "%s%c%s", value, sep, old);
    setenv(var, joined, 1);
    free(joined);
}

/*
 * LD_PRELOAD the capture library.  ld.so splits LD_PRELOAD at spaces and
 * colons, so a library whose path has a space (an install under "/opt/My
 * Tools") is preloaded by its name, with its folder first in
 * LD_LIBRARY_PATH (split at colons and semicolons only).
 */
static int preload(const char *lib)
{
    if (!strpbrk(lib, " \t\n:")) {
        prepend("LD_PRELOAD", lib, ':');
        return 0;
    }
    const char *slash = strrchr(lib, '/');
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - lib), lib);
    if (strpbrk(dir, ":;") || strpbrk(slash + 1, " \t\n:")) {
        fprintf(stderr, "memflow run: cannot preload '%s': the dynamic loader cannot take a "
                "path with ':' or ';' (install memflow elsewhere or set MEMFLOW_LIBDIR)\n", lib);
        return -1;
    }
    prepend("LD_PRELOAD", slash + 1, ':');
    prepend("LD_LIBRARY_PATH", dir, ':');
    return 0;
}

static int prepare_environment(const run_ident *run)
{
    char lib[PATH_MAX], cuda[PATH_MAX], hex[MF_RUN_ID_HEX];
    if (find_library("libmemflow-preload.so", lib, sizeof lib) < 0) {
        fprintf(stderr, "memflow run: cannot find libmemflow-preload.so (looked next to the "
                "memflow executable and in %s); set MEMFLOW_LIBDIR\n", MEMFLOW_PKGLIBDIR);
        return -1;
    }
    if (preload(lib) < 0)
        return -1;
    const char *injection = getenv("CUDA_INJECTION64_PATH");
    /* cupti=0: CUPTI is left to the program's own tools (torch.profiler) */
    if (mf_config_get()->cupti && find_library("libmemflow-cuda.so", cuda, sizeof cuda) == 0) {
        if (!injection || !*injection)
            setenv("CUDA_INJECTION64_PATH", cuda, 1);
        else if (strcmp(injection, cuda) != 0) /* the driver loads one injection */
            fprintf(stderr, "memflow run: CUDA_INJECTION64_PATH is already set (%s): kept, so "
                    "memflow records no GPU memory in this run\n", injection);
    }
    set_nvtx_injection();
    mf_run_id_format(run->id, hex);
    setenv("MEMFLOW_PATH", run->dir, 1);
    setenv("MEMFLOW_RUN_ID", hex, 1);
    setenv("MEMFLOW_AUTOSTART", "1", 1);
    cli_python_environment();
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

/* The command could not be executed: say why, as env does. */
static int exec_failure(const char *command, int exec_errno)
{
    if (exec_errno == ENOENT) {
        if (strchr(command, '/'))
            fprintf(stderr, "memflow run: '%s': no such file\n", command);
        else
            fprintf(stderr, "memflow run: '%s': command not found\n", command);
        return RUN_EXIT_NOT_FOUND;
    }
    fprintf(stderr, "memflow run: cannot run '%s': %s\n", command, strerror(exec_errno));
    return RUN_EXIT_CANNOT_RUN;
}

/* Where the time after the program's exit goes, for MEMFLOW_RUN_REPORT=1:
 * the moments each step ended (CLOCK_MONOTONIC ns). */
enum { AT_EXIT, AT_DRAINED, AT_READ, AT_WRITTEN, AT_COMPACTED, N_AT };
static uint64_t at_ns[N_AT];

static void mark(int step)
{
    at_ns[step] = mf_monotonic_ns();
}

static void report_tail(void)
{
    if (!run_reporting())
        return;
    static const char *const what[N_AT] = { NULL, "to write what was staged", "to read the rest",
                                            "for the outputs", "to finish compacting" };
    fprintf(stderr, "memflow run: after the program's exit:");
    uint64_t before = at_ns[AT_EXIT];
    for (int i = AT_DRAINED; i < N_AT; i++) {
        if (!at_ns[i])
            continue;
        fprintf(stderr, " %.3f s %s%s", (double)(at_ns[i] - before) / 1e9, what[i],
                i + 1 < N_AT ? "," : "");
        before = at_ns[i];
    }
    fprintf(stderr, "\n");
}

/* The outputs of this run's logs: of the model the analysis during the
 * run built, or, when it could not be exactly the model of the finished
 * logs, of those logs read now. Each output that cannot be written (a full disk,
 * a file size limit) is named with why, the others are written; one line
 * says what was.  -1 when any output failed. */
static int render_logs(const char *dir, int n, char **paths)
{
    mf_model *model = run_analysis_finish(n, paths);
    if (model)
        cli_print_warnings(model);
    else
        model = cli_load_model(n, paths, UINT64_MAX);
    cli_compact_run_release();   /* the logs are read: compact forms may replace them */
    if (!model)
        return -1;
    mark(AT_READ);
    int rc = cli_render_logs("memflow run", dir, n, paths, model);
    mark(AT_WRITTEN);
    return rc;
}

/* After the program: render this run's logs; the exit status. */
static int finish(const run_options *opt, const run_ident *run, int status)
{
    int n;
    char **logs = run_logs_find(run, &n);
    if (n == 0) {
        run_logs_explain_none(opt->command[0], run->dir);
        run_analysis_discard();
        run_compact_forget();
        free(logs);
        return status ? status : 1;
    }
    if (opt->compact)
        cli_compact_run_begin(n, logs);   /* on the other core, beside the rendering */
    int render_failed = opt->render && render_logs(run->dir, n, logs) < 0;
    if (opt->compact) {
        cli_compact_run_end();
        mark(AT_COMPACTED);
    }
    run_compact_forget();
    report_tail();
    for (int i = 0; i < n; i++)
        free(logs[i]);
    free(logs);
    return status == 0 && render_failed ? 1 : status;
}

int cmd_run(int argc, char **argv)
{
    run_options opt;
    char dir[PATH_MAX], err[1024];
    if (mf_config_apply_env(err, sizeof err) < 0) {
        fprintf(stderr, "memflow run: %s\n", err);
        return RUN_EXIT_OWN_ERROR;
    }
    if (parse_options(argc, argv, &opt) < 0 || output_dir(opt.dir, dir, sizeof dir) < 0)
        return RUN_EXIT_OWN_ERROR;
    run_ident run = { .dir = dir };
    mf_run_id_fresh(run.id);
    if (prepare_environment(&run) < 0 || run_stage_prepare(&run) < 0)
        return RUN_EXIT_OWN_ERROR;
    run_child_adopt_orphans();
    int exec_errno;
    pid_t pid = run_child_start(opt.command, &exec_errno);
    if (pid < 0) {
        run_stage_finish(0); /* no program ran: its staging file goes */
        run_stage_release();
        return pid == -1 ? exec_failure(opt.command[0], exec_errno) : RUN_EXIT_OWN_ERROR;
    }
    if (opt.render)
        run_stage_write_idle();
    if (opt.compact)
        run_compact_start();
    run_stage_start();
    if (opt.render)
        run_analysis_start(&run, mf_config_get()->stacks > 0);
    int status = run_child_wait(pid, &run);
    mark(AT_EXIT);
    run_analysis_hurry();    /* it reads on while what was staged is copied */
    run_compact_stop();
    run_stage_finish(pid);
    mark(AT_DRAINED);
    run_analysis_stop();
    run_stage_release();
    return finish(&opt, &run, status);
}
