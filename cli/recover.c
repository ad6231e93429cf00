/*
 * recover.c - before reading an output folder, give the logs back what a
 * killed run left staged.
 *
 * Under memflow run the program's records pass through a stage file in the
 * output folder (runtime/stage.h) that memflow run copies into the logs.
 * When the program and memflow run are killed together, the records not yet
 * copied are still in that file, memflow-RUNID.stage.  stats, render,
 * compact and serve call cli_recover_staged first: every stage file in the
 * folders they read whose run is over is written into its log and removed
 * (mf_stage_recover checks the lock, the log's identity and its run id), so
 * a killed run loses nothing.  What it did, and any stage it had to leave,
 * is said on stderr.  The unfinished files of compactions that were killed
 * (analyze/compact/compact.h, mf_compact_clean_folder; no reader takes them
 * for logs) are removed there too.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "compact.h"
#include "options.h"
#include "stage_drain.h"
#include "stage_slots.h"

/* Whether name is memflow-*.stage. */
static int is_stage_name(const char *name)
{
    size_t n = strlen(name), suffix = strlen(MF_STAGE_SUFFIX);
    return n > strlen("memflow-") + suffix && strncmp(name, "memflow-", 8) == 0 &&
           strcmp(name + n - suffix, MF_STAGE_SUFFIX) == 0;
}

/* Recover every stage file in folder; remove what killed compactions left. */
static void recover_folder(const char *folder)
{
    int cleaned = mf_compact_clean_folder(folder);
    if (cleaned)
        fprintf(stderr, "memflow: removed %d unfinished compact file%s that a killed memflow "
                "left in %s (the logs are whole)\n", cleaned, cleaned == 1 ? "" : "s", folder);
    DIR *d = opendir(folder);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX], msg[3 * PATH_MAX];
        if (!is_stage_name(e->d_name) ||
            (size_t)snprintf(path, sizeof path, "%s/%s", folder, e->d_name) >= sizeof path)
            continue;
        int rc = mf_stage_recover(path, msg, sizeof msg);
        if (msg[0])
            cli_say(rc < 0 ? "memflow: warning: " : "memflow: ", msg);
    }
    closedir(d);
}

/* The folder a path names: itself, or the one that holds it. */
static void folder_of(const char *path, char *out, size_t len)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(out, len, "%s", path);
    else
        cli_folder_of(path, out, len);
}

void cli_recover_staged(int n, char *const *paths)
{
    char done[8][PATH_MAX]; /* folders already looked at (most calls name one) */
    int n_done = 0;
    for (int i = 0; i < n; i++) {
        char folder[PATH_MAX];
        folder_of(paths[i], folder, sizeof folder);
        int seen = 0;
        for (int k = 0; k < n_done && !seen; k++)
            seen = strcmp(done[k], folder) == 0;
        if (seen)
            continue;
        recover_folder(folder);
        if (n_done < 8)
            snprintf(done[n_done++], PATH_MAX, "%s", folder);
    }
}
