/*
 * index.c - opening the view index of a set of logs (index.h): the reader
 * is opened first, into the model's string pool (its string and stack ids
 * are what the index names);
 * when the logs are finished and LOG.mfi indexes them as they are now, it
 * is reused; otherwise the logs are read once through the model into the
 * builder (index_build.c), in a new file that replaces LOG.mfi once
 * complete.  Logs still being written keep their index in a temporary
 * file that follows them (mf_index_refresh).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index_state.h"

#define BATCH 4096

/* The column shift of level 0: 1 us columns, or wider so that the logs as
 * long as they are now take at most 2^20 columns. */
static unsigned choose_wshift(const mf_reader *r, uint64_t t0)
{
    uint64_t last = t0;
    for (size_t i = 0; i < mf_reader_n_logs(r); i++) {
        const mf_log_info *info = mf_reader_log(r, i);
        if (info->last_ns != 0 && info->first_ns != UINT64_MAX && info->last_ns > last)
            last = info->last_ns;
    }
    unsigned w = 10;
    while (w < 23 && ((last - t0) >> w) > (1u << 20))
        w++;
    return w;
}

/* The finest level with cells: the run takes at most about one column per
 * 2048 records there, and never more than MF_INDEX_BASE_COLS columns (a
 * log still written: as long as it is now, times 4). */
static int choose_cell_level(const mf_index *ix)
{
    uint64_t last = ix->t0, records = 0;
    for (size_t i = 0; i < mf_reader_n_logs(ix->reader); i++) {
        const mf_log_info *info = mf_reader_log(ix->reader, i);
        if (info->last_ns != 0 && info->first_ns != UINT64_MAX && info->last_ns > last)
            last = info->last_ns;
        records += info->records;
    }
    uint64_t span = (last - ix->t0) * (ix->running ? 4 : 1);
    uint64_t cols = records / 2048;
    cols = cols < 2048 ? 2048 : cols > MF_INDEX_BASE_COLS ? MF_INDEX_BASE_COLS : cols;
    int l = 0;
    while (l < MF_INDEX_LEVELS / 2 && (span >> (ix->wshift + (unsigned)l)) > cols)
        l++;
    return l;
}

static int any_running(const mf_reader *r)
{
    for (size_t i = 0; i < mf_reader_n_logs(r); i++)
        if (mf_reader_log(r, i)->running)
            return 1;
    return 0;
}

/* Damage lines not told yet become warnings; every log is described to the model. */
static int describe_logs(mf_index *ix)
{
    for (size_t i = 0; i < mf_reader_n_logs(ix->reader); i++) {
        const mf_log_info *info = mf_reader_log(ix->reader, i);
        if (ix->model && mf_model_set_process(ix->model, (uint32_t)i, info) < 0)
            return -1;
        for (; ix->told && ix->told[i] < info->damage->n; ix->told[i]++)
            ix_warn(ix, "%s", info->damage->lines[ix->told[i]]);
    }
    return 0;
}

/* Feed what the reader has to the model (and so to the builder). */
static int feed(mf_index *ix, int *grew, char *err, size_t errlen)
{
    long n;
    *grew = 0;
    while ((n = mf_reader_next(ix->reader, ix->batch, ix->samples, BATCH, UINT64_MAX, err,
                               errlen)) > 0) {
        *grew = 1;
        for (long i = 0; i < n; i++) {
            const mf_event *e = &ix->batch[i];
            if (e->type == MF_REC_SAMPLE)
                ix_on_sample(ix, e, ix->samples);
            if (e->type != MF_REC_THREAD && e->type != MF_REC_DEVICE && e->time_ns > ix->now)
                ix->now = e->time_ns;
        }
        if (mf_model_feed(ix->model, ix->batch, (size_t)n, ix->samples) < 0 || ix->failed) {
            snprintf(err, errlen, "out of memory, or the index cannot be written");
            return -1;
        }
    }
    if (n < 0)
        return -1;
    if (ix->now > ix->t1)
        ix->t1 = ix->now;
    return 0;
}

/* A new index file: unnamed in the folder of final (named when complete),
 * or unnamed in the temporary folder. */
static int new_file(mf_index *ix)
{
    char folder[PATH_MAX];
    snprintf(folder, sizeof folder, "%s", ix->final_path);
    char *slash = strrchr(folder, '/');
    if (slash)
        *(slash == folder ? slash + 1 : slash) = 0;
    else
        snprintf(folder, sizeof folder, ".");
    int fd = ix->running ? -1 : open(folder, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    if (fd >= 0)
        return fd;
    if (!ix->running)
        ix_warn(ix, "%s: cannot write the index there (%s): it is kept in a temporary file",
                folder, strerror(errno));
    const char *tmp = getenv("TMPDIR");
    fd = open(tmp && *tmp ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    free(ix->final_path);
    ix->final_path = NULL;
    return fd;
}

/* Give the complete unnamed file its name (replacing an older index). */
static void name_file(mf_index *ix)
{
    char proc[64], temp[PATH_MAX];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", ix->fd);
    if (snprintf(temp, sizeof temp, "%s.%ld.tmp", ix->final_path, (long)getpid()) >=
            (int)sizeof temp ||
        linkat(AT_FDCWD, proc, AT_FDCWD, temp, AT_SYMLINK_FOLLOW) < 0) {
        ix_warn(ix, "%s: cannot keep the index: %s", ix->final_path, strerror(errno));
        return;
    }
    if (rename(temp, ix->final_path) < 0) {
        ix_warn(ix, "%s: cannot keep the index: %s", ix->final_path, strerror(errno));
        unlink(temp);
        return;
    }
    free(ix->path);
    ix->path = strdup(ix->final_path);
    if (!ix->path)
        ix->path = strdup("");
}

/* Reuse final_path when it is ours, a plain file, and indexes the logs as they are. */
static int try_reuse(mf_index *ix)
{
    int fd = open(ix->final_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        ix_load(ix, fd) < 0) {
        close(fd);
        return -1;
    }
    char *path = strdup(ix->final_path);
    if (path) {
        free(ix->path);
        ix->path = path;
    }
    ix->reused = 1;
    return 0;
}

static int build(mf_index *ix, char *err, size_t errlen)
{
    ix->fd = new_file(ix);
    if (ix->fd < 0) {
        snprintf(err, errlen, "cannot create the index file: %s", strerror(errno));
        return -1;
    }
    ix->wshift = choose_wshift(ix->reader, ix->t0);
    ix->cell_level = choose_cell_level(ix);
    ix->track_live = ix->running;
    int grew;
    if (describe_logs(ix) < 0 || feed(ix, &grew, err, errlen) < 0)
        return -1;
    if (ix->running) {
        ix_flush(ix);
        ix_settle_views(ix);
        return ix->failed ? -1 : 0;
    }
    if (ix_finish(ix) < 0 || ix_save(ix) < 0) {
        snprintf(err, errlen, "cannot write the index: %s", strerror(errno));
        return -1;
    }
    if (ix->final_path)
        name_file(ix);
    return 0;
}

mf_index *mf_index_open(const char *const *paths, size_t n, const mf_index_options *opt,
                        int *rc, char *err, size_t errlen)
{
    mf_index *ix = calloc(1, sizeof *ix);
    *rc = -1;
    if (!ix || !(ix->log_paths = calloc(n ? n : 1, sizeof *ix->log_paths))) {
        free(ix);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ix->fd = -1;
    ix->path = strdup("");
    ix->merge_runs = opt->merge_runs;
    for (size_t i = 0; i < n; i++)
        if ((ix->log_paths[ix->n_logs] = strdup(paths[i])) != NULL)
            ix->n_logs++;
    size_t len = strlen(paths[0]) + 5;
    ix->final_path = opt->path ? strdup(opt->path) : malloc(len);
    if (!ix->final_path || !ix->path || ix->n_logs != n) {
        snprintf(err, errlen, "out of memory");
        mf_index_close(ix);
        return NULL;
    }
    if (!opt->path)
        snprintf(ix->final_path, len, "%s.mfi", paths[0]);
    if (!opt->rebuild && try_reuse(ix) == 0) {   /* no reader: the file says it all */
        *rc = 0;
        return ix;
    }
    /* the model's pool is the reader's: its ids are the ones events carry */
    mf_model_options mo = { .no_picture = 1, .no_trace = 1, .no_curves = 1,
                            .on_block = ix_on_block, .on_role = ix_on_role,
                            .on_oom = ix_on_oom, .on_block_ctx = ix };
    if (!(ix->model = mf_model_new(&mo, err, errlen))) {
        mf_index_close(ix);
        return NULL;
    }
    ix->pool = ix->model->strings;
    mf_reader_options ro = { .merge_runs = opt->merge_runs };
    int orc = mf_reader_open(&ix->reader, paths, n, ix->pool, &ro, err, errlen);
    if (orc != 0) {
        *rc = orc;
        mf_index_close(ix);
        return NULL;
    }
    ix->t0 = mf_reader_t0(ix->reader);
    if (ix->t0 == UINT64_MAX)
        ix->t0 = 0;
    ix->running = any_running(ix->reader);
    ix->batch = malloc(BATCH * sizeof *ix->batch);
    ix->samples = malloc(BATCH * sizeof *ix->samples);
    ix->told = calloc(mf_reader_n_logs(ix->reader) + 1, sizeof *ix->told);
    if (!ix->batch || !ix->samples || !ix->told) {
        snprintf(err, errlen, "out of memory");
        mf_index_close(ix);
        return NULL;
    }
    if (build(ix, err, errlen) < 0) {
        mf_index_close(ix);
        return NULL;
    }
    if (ix->running)
        ix_warn(ix, "a log is still being written: the view follows it; its index is not kept");
    *rc = 0;
    return ix;
}

int mf_index_refresh(mf_index *ix, int *grew, char *err, size_t errlen)
{
    *grew = 0;
    if (!ix->running)
        return 0;
    if (mf_reader_refresh(ix->reader, err, errlen) < 0)
        return -1;
    if (describe_logs(ix) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (feed(ix, grew, err, errlen) < 0)
        return -1;
    ix->running = any_running(ix->reader);
    ix_flush(ix);
    ix_settle_views(ix);
    return ix->failed ? -1 : 0;
}

void mf_index_close(mf_index *ix)
{
    if (!ix)
        return;
    if (ix->sites)
        mf_sites_close(ix->sites);        /* and its own reader, if it has one */
    mf_strings_free(ix->sites_pool);
    mf_reader_close(ix->reader);
    mf_model_free(ix->model);             /* and its pool, the reader's */
    mf_strings_free(ix->own_pool);
    for (size_t i = 0; i < ix->n_logs; i++)
        free(ix->log_paths[i]);
    free(ix->log_paths);
    for (size_t i = 0; i < ix->n_views; i++)
        ix_view_free(&ix->views[i]);
    free(ix->views);
    free(ix->live.b);
    free(ix->live.slots);
    for (size_t i = 0; i < ix->n_warnings; i++)
        free(ix->warnings[i]);
    free(ix->warnings);
    if (ix->fd >= 0)
        close(ix->fd);
    free(ix->path);
    free(ix->final_path);
    free(ix->batch);
    free(ix->samples);
    free(ix->told);
    free(ix->buf);
    free(ix);
}

int mf_index_reused(const mf_index *ix) { return ix->reused; }
const char *mf_index_path(const mf_index *ix) { return ix->path; }
const mf_strings *mf_index_strings(const mf_index *ix) { return ix->pool; }
size_t mf_index_n_warnings(const mf_index *ix) { return ix->n_warnings; }
const char *mf_index_warning(const mf_index *ix, size_t i)
{
    return i < ix->n_warnings ? ix->warnings[i] : NULL;
}
uint64_t mf_index_t0(const mf_index *ix) { return ix->t0; }
uint64_t mf_index_t1(const mf_index *ix) { return ix->t1 > ix->t0 ? ix->t1 : ix->t0; }
unsigned mf_index_wshift(const mf_index *ix) { return ix->wshift; }
int mf_index_cell_level(const mf_index *ix) { return ix->cell_level; }
int mf_index_running(const mf_index *ix) { return ix->running; }
size_t mf_index_n_views(const mf_index *ix) { return ix->n_views; }
const mf_index_view *mf_index_view_at(const mf_index *ix, size_t i)
{
    return i < ix->n_views ? &ix->views[i].pub : NULL;
}

mf_sites *mf_index_sites(mf_index *ix)
{
    mf_sites *s = __atomic_load_n(&ix->sites, __ATOMIC_ACQUIRE);
    if (!s && ix->reader && mf_reader_n_stacks(ix->reader) > 0) {
        s = mf_sites_open(ix->reader, ix->pool, 0);
        __atomic_store_n(&ix->sites, s, __ATOMIC_RELEASE);
    }
    return s;
}

int mf_index_load_sites(mf_index *ix, char *err, size_t errlen)
{
    if (ix->reader) {
        mf_index_sites(ix);
        return 0;
    }
    mf_strings *pool = mf_strings_new();
    mf_reader *r = NULL;
    mf_reader_options ro = { .merge_runs = ix->merge_runs };
    if (!pool) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (mf_reader_open(&r, (const char *const *)ix->log_paths, ix->n_logs, pool, &ro, err,
                       errlen) != 0) {
        mf_strings_free(pool);
        return -1;
    }
    if (mf_reader_n_stacks(r) == 0) {
        mf_reader_close(r);
        mf_strings_free(pool);
        return 0;
    }
    mf_sites *s = mf_sites_open(r, pool, 1);
    if (!s) {
        mf_reader_close(r);
        mf_strings_free(pool);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ix->sites_pool = pool;
    __atomic_store_n(&ix->sites, s, __ATOMIC_RELEASE);
    return 0;
}

const char *mf_index_program(const mf_index *ix, uint32_t pid)
{
    const char *found = "";
    for (size_t i = 0; !ix->reader && i < ix->n_views; i++)
        if (ix->views[i].pub.pid == pid && ix->views[i].program)
            return ix->views[i].program;
    for (size_t i = 0; ix->reader && i < mf_reader_n_logs(ix->reader); i++) {
        const mf_log_info *info = mf_reader_log(ix->reader, i);
        if (info->header.pid != pid || !info->program)
            continue;
        found = info->program;
        if (info->next_image < 0)
            break;                      /* the pid's last image (after any exec) */
    }
    return found;
}
