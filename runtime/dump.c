/*
 * dump.c - memflow_dump() and memflow_dumps() of memflow.h: the program asks,
 * the analysis answers, outside the program.
 *
 * The profiled process never loads the reader, the model or Cairo.  The
 * first dump starts `memflow serve LOG` (cli/cmd_serve.c) with a socket as
 * its stdin and stdout and keeps it: each request flushes what capture holds
 * (CUPTI buffers) into the log, sends one line, and reads the answer ("ok" or
 * "error", a length, the bytes).  The server reads only what the log gained
 * since its last answer, so repeated dumps cost the new events, not the
 * whole run.  Requests are serialised by one lock; everything here runs
 * inside MF_INTERNAL_BEGIN/END, so memflow's own allocations are not the
 * program's.
 *
 * The server detaches (the process we start exits at once, a grandchild
 * serves), so the program never has a child of ours to reap.  The socket is
 * kept at a high descriptor number and checked (inode) before each use: a
 * program that closed it, or reused its number, makes us start a new server
 * instead of writing into the program's file.
 *
 * continuous_dump (MXNet's key): while recording, a background thread calls
 * memflow_dump(0) every dump_period seconds.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memflow.h"
#include "config.h"
#include "error.h"
#include "log_writer.h"
#include "recorder.h"
#include "stage.h"

#define SERVER_FD_MIN 200   /* keep the socket out of the program's usual range */

extern char **environ;

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static int server_fd = -1;
static ino_t server_ino;
static char *dumps_text;      /* memflow_dumps()'s last answer */

/* ---- finding and starting the server ----------------------------------- */

static int is_executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/*
 * The memflow program: $MEMFLOW_BIN (set by `memflow run`), then next to this
 * library (installed: LIBDIR/../bin/memflow; build tree: .libs/../memflow),
 * then the configured BINDIR.
 */
static int find_memflow(char *out, size_t len)
{
    const char *env = getenv("MEMFLOW_BIN");
    if (env && *env && is_executable(env)) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    Dl_info info;
    if (dladdr((void *)find_memflow, &info) && info.dli_fname) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
            static const char *const rel[] = { "/../bin/memflow", "/../memflow" };
            for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
                int n = snprintf(out, len, "%s%s", dir, rel[i]);
                if (n > 0 && (size_t)n < len && is_executable(out))
                    return 0;
            }
        }
    }
    snprintf(out, len, "%s/memflow", MEMFLOW_BINDIR);
    return is_executable(out) ? 0 : -1;
}

/* Whether an environment entry is one the server must not inherit: the
 * capture (preload, CUDA and NVTX injection) and memflow's own settings. */
static int capture_variable(const char *entry)
{
    static const char *const names[] = { "LD_PRELOAD=", "CUDA_INJECTION64_PATH=",
                                         "NVTX_INJECTION64_PATH=", "MEMFLOW_" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(entry, names[i], strlen(names[i])) == 0)
            return 1;
    return 0;
}

/* The environment without the capture variables (malloc'd array), and
 * MEMFLOW_SERVE_STAGED=1 when the log's chunks reach it through memflow
 * run's stage (the server then reads a chunk only up to its seal). */
static char **server_environment(void)
{
    static char staged[] = "MEMFLOW_SERVE_STAGED=1";
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!capture_variable(environ[i]))
            env[k++] = environ[i];
    if (mf_stage_active())
        env[k++] = staged;
    return env;
}

/* Move fd above the program's usual descriptors; returns the fd to use. */
static int move_high(int fd)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, SERVER_FD_MIN);
    if (high < 0)
        return fd;
    close(fd);
    return high;
}

/* Start `memflow serve LOG`; 0, or -1 with the last error set. */
static int server_start(const char *log)
{
    char memflow[PATH_MAX];
    if (find_memflow(memflow, sizeof memflow) < 0) {
        mf_set_error("cannot find the memflow program (looked at $MEMFLOW_BIN, next to "
                     "libmemflow and in %s)", MEMFLOW_BINDIR);
        return -1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        mf_set_error("cannot start memflow serve: socketpair: %s", strerror(errno));
        return -1;
    }
    char **env = server_environment();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
    char *argv[] = { "memflow", "serve", (char *)log, NULL };
    pid_t pid;
    int rc = env ? posix_spawn(&pid, memflow, &actions, NULL, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&actions);
    free(env);
    close(sv[1]);
    if (rc != 0) {
        close(sv[0]);
        mf_set_error("cannot start %s serve: %s", memflow, strerror(rc));
        return -1;
    }
    /* The started process detaches and exits at once; reap it now. */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    server_fd = move_high(sv[0]);
    struct stat st;
    server_ino = fstat(server_fd, &st) == 0 ? st.st_ino : 0;
    return 0;
}

/* Whether server_fd is still our socket (the program may have closed it). */
static int server_alive(void)
{
    struct stat st;
    return server_fd >= 0 && fstat(server_fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_ino == server_ino;
}

static void server_forget(void)
{
    if (server_alive())
        close(server_fd);
    server_fd = -1;
}

/* ---- one request ------------------------------------------------------- */

/* Move all len bytes through the socket: sending (never raising SIGPIPE) or
 * receiving.  0, or -1 when the server has gone. */
static int transfer(int sending, char *p, size_t len)
{
    while (len) {
        ssize_t n = sending ? send(server_fd, p, len, MSG_NOSIGNAL) : recv(server_fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int send_all(const char *p, size_t len)
{
    return transfer(1, (char *)p, len);
}

static int recv_all(char *p, size_t len)
{
    return transfer(0, p, len);
}

/* The answer's first line: "ok<TAB>N\n" or "error<TAB>N\n". */
static int recv_status(int *ok, size_t *len)
{
    char line[64];
    size_t at = 0;
    while (at + 1 < sizeof line) {
        if (recv_all(line + at, 1) < 0)
            return -1;
        if (line[at] == '\n')
            break;
        at++;
    }
    line[at] = 0;
    unsigned long long n;
    char word[16];
    if (sscanf(line, "%15[a-z]\t%llu", word, &n) != 2)
        return -1;
    *ok = strcmp(word, "ok") == 0;
    *len = (size_t)n;
    return 0;
}

/*
 * Send one request line and read the answer into a malloc'd, NUL-terminated
 * *text.  Returns 1 (ok), 0 (the server's error, in *text), or -1 when the
 * server could not be reached (it is forgotten; the caller may retry once).
 */
static int exchange(const char *request, char **text)
{
    int ok;
    size_t len;
    *text = NULL;
    if (send_all(request, strlen(request)) < 0 || recv_status(&ok, &len) < 0)
        return -1;
    char *buf = malloc(len + 1);
    if (!buf || recv_all(buf, len) < 0) {
        free(buf);
        return -1;
    }
    buf[len] = 0;
    *text = buf;
    return ok;
}

/*
 * Ask the server (starting it if needed, and once more if it went away).
 * Returns as exchange(); the last error is set when the answer is not ok.
 */
static int request_path(const char *fn, const char *dir, char *out, size_t len);

static int request(const char *fn, const char *line, char **text)
{
    const char *open_log = mf_recorder_log_path();
    char log[PATH_MAX];
    if (!open_log || !*open_log) {
        mf_set_error("%s: no log is open; call memflow_set_state(MEMFLOW_RUN) first", fn);
        return -1;
    }
    if (request_path(fn, open_log, log, sizeof log) < 0)
        return -1;
    mf_log_writer_flush(); /* the server reads the file: staged records first */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!server_alive()) {
            server_fd = -1;
            if (server_start(log) < 0)
                return -1;
        }
        int rc = exchange(line, text);
        if (rc == 1)
            return 1;
        if (rc == 0) {
            mf_set_error("%s: %s", fn, *text);
            return 0;
        }
        server_forget();
    }
    mf_set_error("%s: memflow serve stopped answering", fn);
    return -1;
}

/* ---- the API ----------------------------------------------------------- */

/*
 * dir as an absolute path (the server may not share the program's current
 * folder for long: the program can chdir).  Fields of a request are
 * separated by TABs and end with a newline, so names holding either are
 * refused.  0, or -1 with the last error set.
 */
static int request_path(const char *fn, const char *dir, char *out, size_t len)
{
    char cwd[PATH_MAX];
    int n;
    if (dir[0] == '/')
        n = snprintf(out, len, "%s", dir);
    else if (getcwd(cwd, sizeof cwd))
        n = snprintf(out, len, "%s/%s", cwd, dir);
    else
        n = -1;
    if (n < 0 || (size_t)n >= len) {
        mf_set_error("%s: cannot make '%s' an absolute path", fn, dir);
        return -1;
    }
    if (strpbrk(out, "\t\n")) {
        mf_set_error("%s: the path '%s' holds a tab or a newline", fn, dir);
        return -1;
    }
    return 0;
}

MF_EXPORT int memflow_dump(int finished)
{
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&dump_lock);
    if (finished)
        mf_recorder_finish(); /* runs the flush hooks, stops, marks the log */
    else
        mf_recorder_run_flush_hooks();
    static mf_config config; /* under dump_lock */
    const mf_config *c = &config;
    mf_config_snapshot(&config);
    char *line = NULL, *text = NULL, dir[PATH_MAX];
    int rc = -1;
    if (request_path("memflow_dump", c->path, dir, sizeof dir) < 0)
        ;
    else if (asprintf(&line, "render\t%s\t%s\t%s\t%s\n", dir, c->formats, c->filename,
                      c->gpu_memory_profile_filename_prefix) < 0)
        mf_set_error("memflow_dump: out of memory");
    else
        rc = request("memflow_dump", line, &text) == 1 ? 0 : -1;
    free(line);
    free(text);
    pthread_mutex_unlock(&dump_lock);
    MF_INTERNAL_END();
    return rc;
}

MF_EXPORT const char *memflow_dumps(int reset, const char *format, const char *sort_by,
                                    int ascending)
{
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&dump_lock);
    mf_recorder_run_flush_hooks();
    char *line = NULL, *text = NULL;
    const char *answer = NULL;
    if (asprintf(&line, "stats\t%s\t%s\t%d\t%d\n", format ? format : "table",
                 sort_by ? sort_by : "total", ascending != 0, reset != 0) < 0) {
        mf_set_error("memflow_dumps: out of memory");
    } else if (request("memflow_dumps", line, &text) == 1) {
        free(dumps_text);
        dumps_text = text;
        answer = text;
        text = NULL;
    }
    free(line);
    free(text);
    pthread_mutex_unlock(&dump_lock);
    MF_INTERNAL_END();
    return answer;
}

/* ---- continuous dumps -------------------------------------------------- */

/* The continuous-dump thread: memflow's own, so nothing it does is recorded. */
static void *continuous_dump_loop(void *arg)
{
    (void)arg;
    MF_INTERNAL_BEGIN();
    static mf_config config; /* this thread's copy */
    for (;;) {
        mf_config_snapshot(&config);
        double period = config.dump_period;
        struct timespec ts = { (time_t)period, (long)((period - (double)(time_t)period) * 1e9) };
        while (nanosleep(&ts, &ts) < 0)
            ;
        mf_config_snapshot(&config);
        if (mf_recording_now() && config.continuous_dump && memflow_dump(0) < 0)
            fprintf(stderr, "memflow: continuous dump: %s\n", memflow_last_error());
    }
    return NULL;
}

/* The recorder's start hook: runs each time recording starts, on any thread. */
static void continuous_dump_start(void)
{
    static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
    static int started;
    static mf_config config;
    pthread_mutex_lock(&start_lock);
    mf_config_snapshot(&config);
    int start = !started && config.continuous_dump;
    started |= start;
    pthread_mutex_unlock(&start_lock);
    if (!start)
        return;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, continuous_dump_loop, NULL) != 0)
        fprintf(stderr, "memflow: continuous dump: cannot start its thread\n");
    pthread_attr_destroy(&attr);
}

__attribute__((constructor)) static void dump_init(void)
{
    mf_recorder_set_start_hook(continuous_dump_start);
}
