/*
 * cmd_import.c - `memflow import FILE... -o DIR [--no-render] [--no-compact]`:
 * PyTorch CUDA memory snapshots (the pickle of torch.cuda.memory._snapshot(),
 * as _dump_snapshot() writes it) become memflow logs, one per snapshot, of
 * one run (one run id: rendered together, as the processes of one run), and
 * then every output is rendered and the logs compacted, as memflow run does.
 *
 * The snapshot is read as data by the safe pickle reader (common/torch/):
 * nothing in it runs.  The conversion (torch_convert.h) writes into a log
 * file (import_log.h); the live path of the Python extension runs the same
 * conversion into the running program's log.
 *
 * Exit status: 0 every snapshot imported; 1 an I/O or output failure; 2 bad
 * usage; 10 + the pickle reader's status for a snapshot it would not read:
 * 11 refused (an opcode that names, calls or asks for a Python object: a
 * global, a reduce, a persistent id), 12 unsupported, 13 truncated (a cut
 * file), 14 malformed, 15 over the memory budget, 16 unreadable; 20 plain
 * data but not a memory snapshot; 21 imported, but damaged: entries without
 * the fields their action needs (skipped) or that contradict what was live
 * (the live one ends there), each named with its offset, the rest imported
 * and rendered.  The first failure gives the status; the other snapshots
 * are still imported and rendered.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "import_log.h"
#include "options.h"
#include "paths.h"
#include "progress.h"
#include "run_id.h"
#include "torch_convert.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_PICKLE 10           /* + enum mf_pickle_status */
#define EXIT_NOT_SNAPSHOT 20
#define EXIT_DAMAGED 21          /* imported, but entries were damaged or contradictory */

/* The damaged or contradictory entries named one by one, per snapshot. */
#define PROBLEMS_SHOWN 10

/* Times of a snapshot without time_us start here (1 s), 1 us per event. */
#define ORDER_ORIGIN_NS 1000000000ull

typedef struct import_args {
    char **files;
    int n_files;
    const char *dir;
    int render, compact;
} import_args;

static void usage(FILE *out)
{
    fputs("usage: memflow import FILE... [-o DIR] [--no-render] [--no-compact]\n"
          "\n"
          "Import PyTorch CUDA memory snapshots (the pickle written by\n"
          "torch.cuda.memory._dump_snapshot(), or pickle.dump(torch.cuda.memory._snapshot()))\n"
          "as memflow logs, one per snapshot, then render every output as memflow run\n"
          "does: segments are the GPU's blocks, tensors sub-blocks inside them, on a time\n"
          "axis (time_us; the event order when the snapshot has none), with frames as\n"
          "stacks and user_metadata as scopes.  The pickle is read as data: nothing in it\n"
          "runs, and a pickle that asks for code is refused.\n"
          "\n"
          "  -o DIR          output folder (default: memflow-out)\n"
          "  --no-render     only write the logs\n"
          "  --no-compact    leave the logs in their live form\n"
          "\n"
          "exit status: 0 ok, 1 I/O or output failure, 2 bad usage, 11 a pickle that\n"
          "             names, calls or asks for an object (refused), 12 unsupported\n"
          "             pickle, 13 cut short, 14 malformed, 15 over the memory budget,\n"
          "             16 unreadable, 20 not a memory snapshot, 21 imported but\n"
          "             damaged (entries skipped or contradictory, named on stderr)\n",
          out);
}

static int parse(int argc, char **argv, import_args *a)
{
    memset(a, 0, sizeof *a);
    a->render = a->compact = 1;
    a->files = calloc((size_t)argc, sizeof *a->files);
    if (!a->files)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            usage(stdout);
            exit(0);
        } else if (cli_is_option(s, "-o") || cli_is_option(s, "--output")) {
            if (!(a->dir = cli_option_value(argc, argv, &i, s[1] == 'o' ? "-o" : "--output"))) {
                fprintf(stderr, "memflow import: %s needs a folder\n", s);
                return -1;
            }
        } else if (strcmp(s, "--no-render") == 0) {
            a->render = 0;
        } else if (strcmp(s, "--no-compact") == 0) {
            a->compact = 0;
        } else if (strcmp(s, "--") == 0) {
            while (++i < argc)
                a->files[a->n_files++] = argv[i];
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "memflow import: unknown option '%s'\n", s);
            return -1;
        } else {
            a->files[a->n_files++] = argv[i];
        }
    }
    if (a->n_files == 0) {
        fprintf(stderr, "memflow import: no snapshot to import\n");
        return -1;
    }
    if (!a->dir)
        a->dir = getenv("MEMFLOW_PATH");
    if (!a->dir || !*a->dir)
        a->dir = "memflow-out";
    return 0;
}

/* ---- one snapshot ---- */

typedef struct source {
    int fd;
    const char *path;
    cli_progress *progress;
    uint64_t size;
    uint64_t problems;        /* damaged or contradictory entries met */
} source;

static mf_pickle_reader *open_source(void *arg, char *err, size_t errlen)
{
    source *s = arg;
    return mf_pickle_reader_fd(s->fd, err, errlen);
}

static void on_progress(void *arg, uint64_t offset, uint64_t entries)
{
    source *s = arg;
    cli_progress_show(s->progress, "importing %s: %.0f%%, %llu entries", s->path,
                      s->size ? 100.0 * (double)offset / (double)s->size : 0.0,
                      (unsigned long long)entries);
}

/* A damaged or contradictory entry: named, up to PROBLEMS_SHOWN of them. */
static void on_problem(void *arg, uint64_t offset, const char *what)
{
    source *s = arg;
    if (s->problems++ < PROBLEMS_SHOWN)
        fprintf(stderr, "memflow import: %s: offset %llu: %s\n", s->path,
                (unsigned long long)offset, what);
}

/* The exit status of a failed conversion. */
static int status_of(int rc)
{
    return rc == MF_TORCH_NOT_A_SNAPSHOT ? EXIT_NOT_SNAPSHOT : EXIT_PICKLE + rc;
}

/* What the import of one snapshot says on stderr when it took a while or
 * found something worth saying. */
static void report(const char *path, const mf_torch_result *r, double seconds)
{
    fprintf(stderr, "memflow import: %s: %llu trace entries (%llu tensors, %llu segments",
            path, (unsigned long long)r->entries, (unsigned long long)r->tensors,
            (unsigned long long)r->segments);
    if (r->before_tensors || r->before_segments)
        fprintf(stderr, "; live before the history: %llu tensors, %llu segments",
                (unsigned long long)r->before_tensors, (unsigned long long)r->before_segments);
    if (r->ooms)
        fprintf(stderr, "; %llu out-of-memory errors", (unsigned long long)r->ooms);
    fprintf(stderr, ") in %.2f s\n", seconds);
    if (r->event_order_devices)
        fprintf(stderr, "memflow import: %s: no time_us (PyTorch < 2.2): times are the order "
                "of the allocator's events, 1 us apart\n", path);
    if (r->walk.unknown_actions)
        fprintf(stderr, "memflow import: %s: %llu entries with actions memflow does not know "
                "were skipped\n", path, (unsigned long long)r->walk.unknown_actions);
    if (r->damaged || r->inconsistent) {
        fprintf(stderr, "memflow import: %s: the snapshot is damaged: %llu entries without "
                "the fields their action needs were skipped, %llu contradict what was live",
                path, (unsigned long long)r->damaged, (unsigned long long)r->inconsistent);
        if (r->damaged + r->inconsistent > PROBLEMS_SHOWN)
            fprintf(stderr, " (the first %d are named above)", PROBLEMS_SHOWN);
        fputs("; the rest is imported\n", stderr);
    }
}

/* Import file (process pid of run id) into log_path; 0 or an exit status
 * (EXIT_DAMAGED: the log is written, with what was intact). */
static int import_one(const char *file, const char *log_path, uint32_t pid,
                      const uint8_t id[MF_RUN_ID_BYTES])
{
    char err[1024];
    source src = { .path = file };
    src.fd = open(file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (src.fd < 0 || fstat(src.fd, &st) < 0) {
        fprintf(stderr, "memflow import: cannot open %s: %s\n", file, strerror(errno));
        if (src.fd >= 0)
            close(src.fd);
        return EXIT_FAILED;
    }
    src.size = (uint64_t)st.st_size;
    import_log *log = import_log_create(log_path, id, pid, file, err, sizeof err);
    if (!log) {
        fprintf(stderr, "memflow import: %s\n", err);
        close(src.fd);
        return EXIT_FAILED;
    }
    cli_progress progress;
    cli_progress_begin(&progress, isatty(2));
    src.progress = &progress;
    mf_torch_sink sink = import_log_sink(log);
    mf_torch_options opt = { .order_origin_ns = ORDER_ORIGIN_NS, .progress = on_progress,
                             .progress_arg = &src, .problem = on_problem, .problem_arg = &src };
    mf_torch_convert *c = mf_torch_convert_new(&sink, &opt);
    mf_torch_result r;
    int rc = c ? mf_torch_convert_run(c, open_source, &src, &r, err, sizeof err)
               : MF_PICKLE_MEMORY;
    if (!c)
        snprintf(err, sizeof err, "out of memory");
    mf_torch_convert_free(c);
    close(src.fd);
    cli_progress_end(&progress);
    if (rc != 0) {
        fprintf(stderr, "memflow import: %s: %s\n", file, err);
        import_log_close(log, 0, 0, 0, 0, err, sizeof err);
        return status_of(rc);
    }
    uint64_t start = r.first_ns ? r.first_ns : ORDER_ORIGIN_NS;
    if (import_log_close(log, start, r.event_order_devices || !r.entries ? 0 : start,
                         r.last_ns ? r.last_ns : start, 1, err, sizeof err) < 0) {
        fprintf(stderr, "memflow import: %s\n", err);
        return EXIT_FAILED;
    }
    report(file, &r, cli_progress_seconds(&progress));
    return r.damaged || r.inconsistent ? EXIT_DAMAGED : 0;
}

int cmd_import(int argc, char **argv)
{
    import_args a;
    char err[1024], dir[PATH_MAX];
    if (mf_config_apply_env(err, sizeof err) < 0) {
        fprintf(stderr, "memflow import: %s\n", err);
        return EXIT_USAGE;
    }
    if (parse(argc, argv, &a) < 0) {
        free(a.files);
        return EXIT_USAGE;
    }
    if (mf_make_dirs(a.dir, err, sizeof err) < 0 || !realpath(a.dir, dir)) {
        fprintf(stderr, "memflow import: cannot use the folder %s: %s\n", a.dir,
                *err ? err : strerror(errno));
        free(a.files);
        return EXIT_FAILED;
    }
    uint8_t id[MF_RUN_ID_BYTES];
    mf_run_id_fresh(id);
    char **logs = calloc((size_t)a.n_files, sizeof *logs);
    int n_logs = 0, status = 0;
    for (int i = 0; logs && i < a.n_files; i++) {
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/memflow-import-%d.mfl", dir, i + 1);
        int rc = import_one(a.files[i], path, (uint32_t)(i + 1), id);
        if ((rc == 0 || rc == EXIT_DAMAGED) && (logs[n_logs] = strdup(path)))
            n_logs++;
        if (rc != 0 && status == 0)
            status = rc;
    }
    if (!logs)
        status = EXIT_FAILED;
    if (n_logs && a.render && cli_render_logs("memflow import", dir, n_logs, logs, NULL) < 0 &&
        status == 0)
        status = EXIT_FAILED;
    if (n_logs && a.compact)
        cli_compact_run_logs(n_logs, logs);
    for (int i = 0; i < n_logs; i++)
        free(logs[i]);
    free(logs);
    free(a.files);
    return status;
}
