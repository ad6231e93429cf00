/*
 * main.c - the `memflow` command: dispatch to run, stats and render.
 *
 *   memflow run [-o DIR] [--sample-rate N] [--set KEY=VALUE]... [--no-render] -- CMD [ARGS...]
 *   memflow stats LOG... [--format table|json] [--sort-by KEY] [--ascending]
 *   memflow render LOG... [-o DIR] [--formats LIST] [--color-by MODE] [--device DEV] [--at TIME]
 *   memflow compact LOG...
 *   memflow view LOG...|DIR [--port N] [--no-open]   (cli/cmd_view.c: a local viewer)
 *   memflow import SNAPSHOT... [-o DIR] [--no-render] [--no-compact]
 *   memflow serve LOG   (requests on stdin, answers on stdout: cli/cmd_serve.c;
 *                        the analysis behind memflow_dump()/memflow_dumps())
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "memflow.h"
#include "commands.h"

/* SIGXFSZ as memflow was started with it (the program's to have). */
static struct sigaction inherited_xfsz;

/* A file size limit makes memflow's own writes fail with EFBIG, said like
 * a full disk, instead of killing it half-way through an output. */
static void ignore_file_size_signal(void)
{
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGXFSZ, &ignore, &inherited_xfsz);
}

void cli_restore_inherited_signals(void)
{
    sigaction(SIGXFSZ, &inherited_xfsz, NULL);
}

static void usage(FILE *out)
{
    fputs("usage: memflow COMMAND [ARGS...]\n"
          "\n"
          "memflow records every CPU and GPU allocation of a program (address, size,\n"
          "time, thread, scope) and draws where memory went.\n"
          "\n"
          "commands:\n"
          "  run     profile a program:  memflow run [-o DIR] -- CMD [ARGS...]\n"
          "  stats   statistics of logs: memflow stats LOG... [--format table|json]\n"
          "  render  draw logs:          memflow render LOG... [-o DIR] [--formats LIST]\n"
          "  compact shrink finished logs: memflow compact LOG...\n"
          "  import  PyTorch memory snapshots to logs and outputs: memflow import FILE... -o DIR\n"
          "  serve   answer requests about a log being written: memflow serve LOG\n"
          "  view    zoom into logs in a browser: memflow view LOG...|DIR [--port N]\n"
          "\n"
          "'memflow COMMAND --help' describes a command; 'memflow --version' the version.\n",
          out);
}

int main(int argc, char **argv)
{
    ignore_file_size_signal();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("memflow %s\n", MEMFLOW_VERSION);
        return 0;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "stats") == 0)
        return cmd_stats(argc - 1, argv + 1);
    if (strcmp(cmd, "render") == 0)
        return cmd_render(argc - 1, argv + 1);
    if (strcmp(cmd, "compact") == 0)
        return cmd_compact(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    if (strcmp(cmd, "view") == 0)
        return cmd_view(argc - 1, argv + 1);
    if (strcmp(cmd, "import") == 0)
        return cmd_import(argc - 1, argv + 1);
    fprintf(stderr, "memflow: unknown command '%s'; commands: run, stats, render, compact, serve, "
            "import, view "
            "(see 'memflow --help')\n", cmd);
    return 2;
}
