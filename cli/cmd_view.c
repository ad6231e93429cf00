/*
 * cmd_view.c - `memflow view LOG...|DIR [--port N] [--no-open]
 * [--merge-runs] [--rebuild] [--index-only]`: open (or build) the index of the logs
 * (analyze/index/index.h), serve the zoomable viewer on the loopback
 * (view_server.c), print its URL with its token, open a browser where one
 * is available, and serve until interrupted.  A DIR stands for the
 * memflow-*.mfl logs in it.  Exit: 0 after SIGINT/SIGTERM, 1 the logs
 * cannot be read or the port had, 2 bad usage, 4 logs of different runs.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "index.h"
#include "reader.h"
#include "view_server.h"

#define MAX_LOGS 4096

static void usage(FILE *out)
{
    fputs("usage: memflow view LOG...|DIR [--port N] [--no-open] [--merge-runs] [--rebuild]\n"
          "                    [--index-only]\n"
          "\n"
          "Serve a zoomable time x address view of memflow logs on this machine only\n"
          "(127.0.0.1), from an index kept beside the first log (LOG.mfi, reused while\n"
          "the logs are unchanged).  A DIR stands for the memflow-*.mfl logs in it.  The\n"
          "URL printed carries a random token; keep it private.  Ctrl-C stops.\n"
          "\n"
          "  --port N       listen on port N (default: a free port)\n"
          "  --no-open      do not start a browser (default: xdg-open where a display is)\n"
          "  --merge-runs   view logs of different runs together\n"
          "  --rebuild      build the index anew even when it is fresh\n"
          "  --index-only   build the index (or find it fresh), print where it is, exit\n"
          "\n"
          "exit status: 0 stopped by a signal, 1 the logs cannot be read or the port had,\n"
          "             2 bad usage, 4 logs of different runs (see --merge-runs)\n",
          out);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The logs of folder dir (plain files memflow-*.mfl, no links) appended to logs. */
static int add_folder(const char *dir, char **logs, int *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "memflow view: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int first = *n;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < MAX_LOGS) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "memflow-", 8) || len < 12 || strcmp(e->d_name + len - 4, ".mfl"))
            continue;
        char path[PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path ||
            lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (!(logs[(*n)++] = strdup(path))) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    qsort(logs + first, (size_t)(*n - first), sizeof *logs, by_name);
    if (*n == first) {
        fprintf(stderr, "memflow view: %s: no memflow-*.mfl logs in this folder\n", dir);
        return -1;
    }
    return 0;
}

/* A reused index read no log: the stacks are read on a thread of their
 * own while the page is served (hover shows sites once they are in), at
 * the lowest priority, so the answers the page waits for come first. */
static void *load_sites(void *arg)
{
    char err[512];
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    if (mf_index_load_sites(arg, err, sizeof err) < 0)
        fprintf(stderr, "memflow view: warning: no stacks: %s\n", err);
    return NULL;
}

/* Start a browser on url when one can be shown (a display and xdg-open). */
static void open_browser(const char *url)
{
    if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
        return;
    if (access("/usr/bin/xdg-open", X_OK) != 0)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        pid_t again = fork();           /* the browser is nobody's child of ours */
        if (again == 0) {
            cli_restore_inherited_signals(); /* SIGXFSZ as memflow found it */
            execl("/usr/bin/xdg-open", "xdg-open", url, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

int cmd_view(int argc, char **argv)
{
    static char *logs[MAX_LOGS];
    int n = 0, no_open = 0, index_only = 0;
    long port = 0;
    mf_index_options opt = { 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--no-open")) {
            no_open = 1;
        } else if (!strcmp(a, "--merge-runs")) {
            opt.merge_runs = 1;
        } else if (!strcmp(a, "--index-only")) {
            index_only = 1;
        } else if (!strcmp(a, "--rebuild")) {
            opt.rebuild = 1;
        } else if (!strcmp(a, "--port") && i + 1 < argc) {
            char *end;
            errno = 0;
            port = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || port < 0 || port > 65535) {
                fprintf(stderr, "memflow view: --port wants 0..65535, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "memflow view: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            struct stat st;
            if (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) {
                if (add_folder(a, logs, &n) < 0)
                    return 1;
            } else if (n < MAX_LOGS && !(logs[n++] = strdup(a))) {
                return 1;
            }
        }
    }
    if (n == 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    cli_recover_staged(n, logs);
    char err[2048];
    int rc;
    mf_index *ix = mf_index_open((const char *const *)logs, (size_t)n, &opt, &rc, err, sizeof err);
    if (!ix) {
        fprintf(stderr, "memflow view: %s\n", err);
        return rc == MF_READER_OTHER_RUNS ? CLI_EXIT_OTHER_RUNS : 1;
    }
    for (size_t i = 0; i < mf_index_n_warnings(ix); i++)
        cli_say("memflow view: warning: ", mf_index_warning(ix, i));
    fprintf(stderr, "memflow view: index %s%s\n",
            mf_index_path(ix)[0] ? mf_index_path(ix) : "(temporary)",
            mf_index_reused(ix) ? " (reused)" : "");
    if (index_only) {
        mf_index_close(ix);
        for (int i = 0; i < n; i++)
            free(logs[i]);
        return 0;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);   /* the server's thread inherits it */
    mf_view_server *s = mf_view_server_start(ix, (uint16_t)port, err, sizeof err);
    if (!s) {
        fprintf(stderr, "memflow view: %s\n", err);
        mf_index_close(ix);
        return 1;
    }
    pthread_t sites;
    int sites_started = mf_index_reused(ix) && pthread_create(&sites, NULL, load_sites, ix) == 0;
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/?token=%s", mf_view_server_port(s),
             mf_view_server_token(s));
    printf("memflow view: serving %d log%s at %s\n", n, n == 1 ? "" : "s", url);
    fflush(stdout);
    if (!no_open)
        open_browser(url);
    int sig;
    sigwait(&stop, &sig);
    mf_view_server_stop(s);
    if (sites_started)
        pthread_join(sites, NULL);
    mf_index_close(ix);
    for (int i = 0; i < n; i++)
        free(logs[i]);
    return 0;
}
