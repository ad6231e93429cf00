/*
 * reader.c - the streaming reader (see reader.h): opens the logs, checks
 * that they belong to one run, scans them, relates their processes (exec
 * chains, forked children, how and when each ended) and feeds the merge.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "merge.h"
#include "process_start.h"
#include "reader.h"
#include "reader_internal.h"

struct mf_reader {
    mf_rlog **logs;
    mf_log_info *info;
    size_t n, cap;
    mf_strings *pool;
    mf_scan_sink sink;
    mf_merge *merge;
    int follow;              /* the logs are being written (mf_reader_options) */
    int finished;            /* mf_reader_finish was called */
    int meta_sorted;         /* the waiting THREAD and DEVICE records are in order */
    size_t meta_head;        /* meta events handed out */
    mf_event *ends;          /* per log: its end event in the merge (type 0: none) */
    uint64_t out_of_order;   /* logs added (follow) before an earlier-started log */
};

/* ---- opening ---------------------------------------------------------------- */

static void rlog_free(mf_rlog *log)
{
    if (!log)
        return;
    mf_chunk_source_close(log->src);
    mf_log_meta_free(&log->meta);
    mf_damage_free(&log->damage);
    mf_idmap_free(&log->strings);
    mf_idmap_free(&log->stacks);
    mf_idmap_free(&log->frames);
    free(log->modules);
    free(log->module_paths);
    free(log->module_at);
    free(log->chunks);
    free(log->path);
    free(log);
}

static mf_rlog *rlog_open(const char *path, char *err, size_t errlen)
{
    mf_rlog *log = calloc(1, sizeof *log);
    if (!log || !(log->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        rlog_free(log);
        return NULL;
    }
    log->first_ns = UINT64_MAX;
    if (mf_chunk_source_open(path, &log->src, err, errlen) < 0) {
        rlog_free(log);
        return NULL;
    }
    size_t len;
    const uint8_t *header = mf_chunk_source_header(log->src, &len);
    if (mf_log_header_parse(path, header, len, &log->meta, &log->damage, err, errlen) < 0) {
        rlog_free(log);
        return NULL;
    }
    const mf_damage *found = mf_chunk_source_damage(log->src);
    for (size_t i = 0; i < found->n; i++)
        mf_damage_add_line(&log->damage, found->lines[i]);
    log->damage.more += found->more;
    return log;
}

static int run_id_zero(const uint8_t *id)
{
    for (int i = 0; i < 16; i++)
        if (id[i])
            return 0;
    return 1;
}

static void run_id_hex(const uint8_t *id, char *out)
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
}

/* Two logs of different runs, unless the caller merges runs. */
static int check_runs(mf_reader *r, char *err, size_t errlen)
{
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < r->n; i++) {
        const uint8_t *id = r->logs[i]->meta.header.run_id;
        if (run_id_zero(id))
            continue;          /* a writer that did not record its run */
        if (first == SIZE_MAX) {
            first = i;
            continue;
        }
        if (memcmp(id, r->logs[first]->meta.header.run_id, 16) == 0)
            continue;
        char a[33], b[33];
        run_id_hex(r->logs[first]->meta.header.run_id, a);
        run_id_hex(id, b);
        snprintf(err, errlen, "%s (run %s) and %s (run %s) are logs of different runs: their "
                 "processes did not run together, so one timeline and one peak of both would "
                 "be made up; render each run on its own, or give --merge-runs to merge them "
                 "anyway", r->logs[first]->path, a, r->logs[i]->path, b);
        return MF_READER_OTHER_RUNS;
    }
    return 0;
}

/* ---- how the logs relate ------------------------------------------------------ */

static int same_argv(const mf_log_meta *a, const mf_log_meta *b)
{
    if (a->argc != b->argc)
        return 0;
    for (int i = 0; i < a->argc; i++)
        if (strcmp(a->argv[i], b->argv[i]) != 0)
            return 0;
    return 1;
}


/*
 * Does log i look like the first image of its pid: forked by a parent of
 * the same program (a logged process whose pid is its ppid, with the same
 * arguments), before any exec?
 */
static int forked_image(const mf_reader *r, size_t i)
{
    const mf_log_meta *c = &r->logs[i]->meta;
    for (size_t j = 0; j < r->n; j++) {
        const mf_log_meta *p = &r->logs[j]->meta;
        if (j != i && p->header.pid == c->header.ppid &&
            !strncmp(p->header.host, c->header.host, sizeof p->header.host) && same_argv(p, c))
            return 1;
    }
    return 0;
}

/* Does image a of a pid come before image b?  A forked image first (clocks
 * of two processes can disagree by milliseconds, the fork-exec order
 * cannot), then by start time, then by the order given. */
static int image_before(const mf_reader *r, size_t a, size_t b)
{
    int fa = forked_image(r, a), fb = forked_image(r, b);
    if (fa != fb)
        return fa;
    uint64_t sa = r->logs[a]->meta.header.start_mono_ns, sb = r->logs[b]->meta.header.start_mono_ns;
    return sa != sb ? sa < sb : a < b;
}

/* Images of the same pid on the same host, in the order they ran. */
static void link_images(mf_reader *r)
{
    for (size_t i = 0; i < r->n; i++)
        r->info[i].prev_image = r->info[i].next_image = -1;
    for (size_t i = 0; i < r->n; i++) {
        const mf_file_header *a = &r->logs[i]->meta.header;
        int best = -1;
        for (size_t j = 0; j < r->n; j++) {
            const mf_file_header *b = &r->logs[j]->meta.header;
            if (j == i || b->pid != a->pid || strncmp(a->host, b->host, sizeof a->host) ||
                !image_before(r, i, j))
                continue;
            if (best < 0 || image_before(r, j, (size_t)best))
                best = (int)j;
        }
        r->info[i].next_image = best;
        if (best >= 0)
            r->info[best].prev_image = (int)i;
    }
}

/*
 * A log that is the first image of its pid, whose parent's image at its
 * start runs the same program, is that image forked: it starts with a copy
 * of the parent's heap.
 */
static void link_forks(mf_reader *r)
{
    for (size_t i = 0; i < r->n; i++) {
        mf_log_info *li = &r->info[i];
        const mf_file_header *h = &r->logs[i]->meta.header;
        li->parent = -1;
        if (li->prev_image >= 0)
            continue;
        for (size_t j = 0; j < r->n; j++) {
            const mf_file_header *p = &r->logs[j]->meta.header;
            int next = r->info[j].next_image;
            if (p->pid != h->ppid || strncmp(p->host, h->host, sizeof p->host) ||
                p->start_mono_ns > h->start_mono_ns ||
                (next >= 0 && r->logs[next]->meta.header.start_mono_ns <= h->start_mono_ns))
                continue;
            if (same_argv(&r->logs[j]->meta, &r->logs[i]->meta))
                li->parent = (int)j;
            break;
        }
    }
}

/* Is the process of header h alive on this host (and not a later process
 * that reuses its pid)? */
static int process_alive(const mf_file_header *h)
{
    char host[sizeof h->host + 1] = "";
    if (gethostname(host, sizeof host - 1) != 0 || strncmp(host, h->host, sizeof h->host))
        return 0;
    if (h->pid == 0 || h->pid > 0x7fffffff || (kill((pid_t)h->pid, 0) != 0 && errno != EPERM))
        return 0;
    uint64_t start_ns = mf_process_start_ns(h->pid);
    if (start_ns == 0)
        return 1;              /* cannot tell: alive */
    return start_ns <= h->start_mono_ns + 2000000000ull;   /* started before its log */
}

/*
 * The last moment image i is known to have run: its last event, or a later
 * fork of a child (whose log starts then, naming it as parent) before its
 * next image took over.
 */
static uint64_t last_alive(const mf_reader *r, size_t i)
{
    const mf_file_header *h = &r->logs[i]->meta.header;
    int next = r->info[i].next_image;
    uint64_t until = next >= 0 ? r->logs[next]->meta.header.start_mono_ns : UINT64_MAX;
    uint64_t last = r->logs[i]->last_ns ? r->logs[i]->last_ns : h->start_mono_ns;
    for (size_t j = 0; j < r->n; j++) {
        const mf_file_header *c = &r->logs[j]->meta.header;
        if (c->ppid == h->pid && !strncmp(c->host, h->host, sizeof c->host) &&
            c->start_mono_ns >= h->start_mono_ns && c->start_mono_ns < until &&
            c->start_mono_ns > last)
            last = c->start_mono_ns;
    }
    return last;
}

/* When and how image i ended. */
static void settle_end(mf_reader *r, size_t i)
{
    mf_log_info *li = &r->info[i];
    const mf_rlog *log = r->logs[i];
    const mf_file_header *h = &log->meta.header;
    uint64_t last = last_alive(r, i);
    li->running = li->end_inferred = li->abnormal = 0;
    li->end_status = h->end_status;
    if (h->end_how == MF_END_SNAPSHOT) {    /* the process went on: no end */
        li->end_how = MF_END_SNAPSHOT;
        li->end_ns = 0;
    } else if (h->end_how != MF_END_UNKNOWN && h->end_ns) {
        li->end_how = h->end_how;
        li->end_ns = h->end_ns > last ? h->end_ns : last;
        li->abnormal = h->end_how == MF_END_SIGNAL || h->end_how == MF_END_OOM_KILLED;
    } else if (li->next_image >= 0) {
        uint64_t next = r->logs[li->next_image]->meta.header.start_mono_ns;
        li->end_how = MF_END_EXEC;
        li->end_ns = next > last ? next : last;
        li->end_inferred = 1;
    } else if (process_alive(h)) {
        li->end_how = MF_END_UNKNOWN;
        li->end_ns = 0;
        li->running = !(h->flags & MF_HEADER_FINISHED);
    } else {
        li->end_how = MF_END_UNKNOWN;
        li->end_ns = last;
        li->end_inferred = 1;
        li->abnormal = !(h->flags & MF_HEADER_FINISHED);
    }
}

/* The end events of images whose end is now known; one whose end moved
 * (a log that grew, an end mark written late) takes its new place. */
static int add_ends(mf_reader *r)
{
    for (size_t i = 0; i < r->n; i++) {
        mf_log_info *li = &r->info[i];
        if (!li->end_ns)
            continue;
        mf_event e = { .type = MF_EV_PROCESS_END, .time_ns = li->end_ns, .log = (uint16_t)i,
                       .end.how = li->end_how | (li->end_inferred ? MF_EV_END_INFERRED : 0) };
        mf_event *old = &r->ends[i];
        if (old->type && old->time_ns == e.time_ns && old->end.how == e.end.how)
            continue;
        if ((old->type ? mf_merge_replace_event(r->merge, old, &e)
                       : mf_merge_add_event(r->merge, &e)) < 0)
            return -1;
        *old = e;
    }
    return 0;
}

static void fill_info(mf_reader *r, size_t i)
{
    mf_log_info *li = &r->info[i];
    const mf_rlog *log = r->logs[i];
    li->path = log->path;
    li->header = log->meta.header;
    li->argc = log->meta.argc;
    li->argv = log->meta.argv;
    li->program = log->meta.program;
    li->first_ns = log->first_ns;
    li->last_ns = log->last_ns;
    li->records = log->records;
    li->damage = &log->damage;
}

/* ---- scanning ------------------------------------------------------------------- */

/* A live log cut at a chunk boundary: chunks the header claims are missing. */
static void check_claimed(mf_rlog *log)
{
    const mf_file_header *h = &log->meta.header;
    if (h->flags & (MF_HEADER_COMPACT | MF_HEADER_DROPPED))
        return;
    for (int look = 0; look < 2; look++) {
        uint64_t size = mf_chunk_source_file_size(log->src);
        uint64_t covered = (size + MF_CHUNK_SIZE - 1) / MF_CHUNK_SIZE;
        if (h->chunks_claimed <= covered)
            return;
        if (look == 0) {       /* a writer between claiming and growing: look again */
            char ignored[256];
            if (mf_chunk_source_refresh(log->src, ignored, sizeof ignored) == 0) {
                size_t len;
                const mf_file_header *fresh =
                    (const void *)mf_chunk_source_header(log->src, &len);
                if (len >= sizeof *fresh)
                    mf_log_header_update(&log->meta, fresh);
            }
            continue;
        }
        mf_damage_add(&log->damage, log->path, size,
                      "the file ends after %llu chunks, but the header says %llu were claimed: "
                      "the log was cut short and the events of %llu chunks are missing",
                      (unsigned long long)covered, (unsigned long long)h->chunks_claimed,
                      (unsigned long long)(h->chunks_claimed - covered));
    }
}

/*
 * Claimed chunks that hold nothing, once the writer is gone: a chunk's header
 * is written when it is claimed, so a chunk below chunks_claimed that reads
 * as zeros (a live log) or has no frame (a compact log) lost its header and
 * whatever records it had - a hole over its first page - or they were never
 * written (a killed run whose staged chunks could not be written back).
 * One line names the first such chunk and says how many there are.
 */
static void check_written(mf_rlog *log)
{
    if (log->writing)
        return;
    size_t n;
    const mf_chunk_info *c = mf_chunk_source_chunks(log->src, &n);
    uint64_t covered = (mf_chunk_source_file_size(log->src) + MF_CHUNK_SIZE - 1) / MF_CHUNK_SIZE;
    uint64_t end = log->meta.header.chunks_claimed < covered ? log->meta.header.chunks_claimed
                                                              : covered;
    uint64_t first = 0, listed = 0;
    for (size_t k = 0; k < n && c[k].index < end; k++) {
        if (!first && c[k].index != listed + 1)
            first = listed + 1;
        listed++;
    }
    if (end <= 1 || listed == end - 1)
        return;
    if (!first)
        first = listed + 1;
    mf_damage_add(&log->damage, log->path, first * MF_CHUNK_SIZE,
                  "chunk %llu was claimed, but it holds nothing: its header and records are "
                  "zeros (a hole over its first page), or were never written; its records, if "
                  "it had any, are lost (%llu chunk%s like it)", (unsigned long long)first,
                  (unsigned long long)(end - 1 - listed), end - 1 - listed == 1 ? "" : "s");
}

static int scan_all(mf_reader *r, char *err, size_t errlen)
{
    r->sink.n_segments = 0;
    r->meta_sorted = 0;
    for (size_t i = 0; i < r->n; i++) {
        const mf_file_header *h = &r->logs[i]->meta.header;
        /* a staged log may still get copies after its process is gone, until
         * the caller says they are done (mf_reader_finish) */
        r->logs[i]->writing = !(h->flags & MF_HEADER_COMPACT) &&
                              (process_alive(h) || (r->logs[i]->staged && !r->finished));
        if ((!r->logs[i]->writing && mf_chunk_source_settle(r->logs[i]->src, err, errlen) < 0) ||
            mf_scan_log(r->logs[i], (uint32_t)i, &r->sink, err, errlen) < 0)
            return -1;
        fill_info(r, i);
    }
    if (mf_merge_add(r->merge, r->sink.segments, r->sink.n_segments) < 0) {
        snprintf(err, errlen, "out of memory while reading the logs");
        return -1;
    }
    return 0;
}

static int relate(mf_reader *r, char *err, size_t errlen)
{
    link_images(r);
    link_forks(r);
    for (size_t i = 0; i < r->n; i++)
        settle_end(r, i);
    if (add_ends(r) < 0) {
        snprintf(err, errlen, "out of memory while reading the logs");
        return -1;
    }
    return 0;
}

/* The order logs are read in, whatever order they were given or found in:
 * by the start of their process image, then pid, then path (so a reader
 * that follows a run's logs as they appear numbers them as one that reads
 * them all at the end). */
static int log_before(const mf_rlog *a, const mf_rlog *b)
{
    const mf_file_header *x = &a->meta.header, *y = &b->meta.header;
    if (x->start_mono_ns != y->start_mono_ns)
        return x->start_mono_ns < y->start_mono_ns;
    if (x->pid != y->pid)
        return x->pid < y->pid;
    return strcmp(a->path, b->path) < 0;
}

static int compare_logs(const void *pa, const void *pb)
{
    const mf_rlog *a = *(mf_rlog *const *)pa, *b = *(mf_rlog *const *)pb;
    return log_before(a, b) ? -1 : log_before(b, a);
}

/* Room for one more log in every per-log array. */
static int grow_logs(mf_reader *r, size_t need)
{
    if (need <= r->cap)
        return 0;
    size_t cap = r->cap ? 2 * r->cap : 8;
    while (cap < need)
        cap *= 2;
    mf_rlog **logs = realloc(r->logs, cap * sizeof *logs);
    if (logs)
        r->logs = logs;
    mf_log_info *info = realloc(r->info, cap * sizeof *info);
    if (info)
        r->info = info;
    mf_event *ends = realloc(r->ends, cap * sizeof *ends);
    if (ends)
        r->ends = ends;
    if (!logs || !info || !ends)
        return -1;
    memset(r->info + r->cap, 0, (cap - r->cap) * sizeof *r->info);
    memset(r->ends + r->cap, 0, (cap - r->cap) * sizeof *r->ends);
    r->cap = cap;
    return 0;
}

static mf_reader *reader_new(mf_strings *pool, const mf_reader_options *opt, size_t n)
{
    mf_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->pool = pool;
    r->follow = opt && opt->follow;
    r->sink.names.pool = pool;
    if (grow_logs(r, n ? n : 1) < 0 || !(r->sink.names.texts = mf_strings_new()) ||
        !(r->merge = mf_merge_new(&r->logs, &r->sink))) {
        mf_reader_close(r);
        return NULL;
    }
    return r;
}

int mf_reader_open(mf_reader **out, const char *const *paths, size_t n, mf_strings *pool,
                   const mf_reader_options *opt, char *err, size_t errlen)
{
    *out = NULL;
    if (n > UINT16_MAX) {
        snprintf(err, errlen, "%zu logs: at most %u can be read together", n, UINT16_MAX);
        return -1;
    }
    mf_reader *r = reader_new(pool, opt, n);
    if (!r) {
        snprintf(err, errlen, "out of memory opening the logs");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!(r->logs[i] = rlog_open(paths[i], err, errlen)))
            rc = -1;
        else
            r->logs[i]->staged = opt && opt->staged;
        r->n = i + 1;
    }
    if (rc == 0)
        qsort(r->logs, r->n, sizeof *r->logs, compare_logs);
    if (rc == 0 && !(opt && opt->merge_runs))
        rc = check_runs(r, err, errlen);
    if (rc == 0 && scan_all(r, err, errlen) < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        if (!r->follow) {
            check_claimed(r->logs[i]);
            check_written(r->logs[i]);
        }
        fill_info(r, i);
    }
    if (rc == 0 && relate(r, err, errlen) < 0)
        rc = -1;
    if (rc != 0) {
        mf_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int mf_reader_add_log(mf_reader *r, const char *path, int staged, char *err, size_t errlen)
{
    if (r->n >= UINT16_MAX) {
        snprintf(err, errlen, "%s: at most %u logs can be read together", path, UINT16_MAX);
        return -1;
    }
    mf_rlog *log = rlog_open(path, err, errlen);
    if (!log)
        return -1;
    if (grow_logs(r, r->n + 1) < 0) {
        rlog_free(log);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < r->n; i++)
        if (log_before(log, r->logs[i])) {
            r->out_of_order++;   /* a reader of all logs puts it before log i */
            break;
        }
    log->staged = staged;
    r->logs[r->n++] = log;
    return mf_reader_refresh(r, err, errlen);
}

int mf_reader_refresh(mf_reader *r, char *err, size_t errlen)
{
    for (size_t i = 0; i < r->n; i++) {
        mf_rlog *log = r->logs[i];
        if (mf_chunk_source_refresh(log->src, err, errlen) < 0)
            return -1;
        size_t len;
        const mf_file_header *fresh = (const void *)mf_chunk_source_header(log->src, &len);
        if (len >= sizeof *fresh)
            mf_log_header_update(&log->meta, fresh);
    }
    if (scan_all(r, err, errlen) < 0)
        return -1;
    return relate(r, err, errlen);
}

int mf_reader_finish(mf_reader *r, char *err, size_t errlen)
{
    int first = !r->finished;
    r->finished = 1;         /* every copy into a staged log is done (scan_all) */
    if (mf_reader_refresh(r, err, errlen) < 0)
        return -1;
    if (r->follow && first)
        for (size_t i = 0; i < r->n; i++) {
            check_claimed(r->logs[i]);
            check_written(r->logs[i]);
            fill_info(r, i);
        }
    return relate(r, err, errlen);
}

uint64_t mf_reader_late(const mf_reader *r, uint64_t *by_ns)
{
    return mf_merge_late(r->merge, by_ns) + r->sink.names.late + r->sink.late_stacks +
           r->out_of_order;
}

void mf_reader_close(mf_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->logs && i < r->n; i++)
        rlog_free(r->logs[i]);
    free(r->logs);
    free(r->info);
    free(r->ends);
    mf_merge_free(r->merge);
    mf_strings_free(r->sink.names.texts);
    free(r->sink.names.pub);
    free(r->sink.stacks);
    free(r->sink.frames);
    free(r->sink.meta);
    free(r->sink.segments);
    free(r);
}

/* ---- reading ------------------------------------------------------------------ */

size_t mf_reader_n_logs(const mf_reader *r)
{
    return r->n;
}

const mf_log_info *mf_reader_log(const mf_reader *r, size_t i)
{
    return i < r->n ? &r->info[i] : NULL;
}

uint64_t mf_reader_t0(const mf_reader *r)
{
    uint64_t t0 = UINT64_MAX;
    for (size_t i = 0; i < r->n; i++)
        t0 = r->logs[i]->first_ns < t0 ? r->logs[i]->first_ns : t0;
    return t0;
}

static int meta_before(const mf_meta_ref *a, const mf_meta_ref *b)
{
    if (a->e.log != b->e.log)
        return a->e.log < b->e.log;
    return a->chunk != b->chunk ? a->chunk < b->chunk : a->offset < b->offset;
}

static int compare_meta(const void *pa, const void *pb)
{
    const mf_meta_ref *a = pa, *b = pb;
    return meta_before(a, b) ? -1 : meta_before(b, a);
}

/* The THREAD and DEVICE records found since the last hand-out, in file
 * order (log, chunk, offset), their names given pool ids now; how many. */
static long hand_out_meta(mf_reader *r, mf_event *out, size_t max, char *err, size_t errlen)
{
    if (!r->meta_sorted && r->sink.n_meta > r->meta_head) {
        qsort(r->sink.meta + r->meta_head, r->sink.n_meta - r->meta_head, sizeof *r->sink.meta,
              compare_meta);
        r->meta_sorted = 1;
    }
    size_t n = 0;
    while (n < max && r->meta_head < r->sink.n_meta) {
        mf_meta_ref *m = &r->sink.meta[r->meta_head++];
        uint32_t name = mf_rlog_string(r->logs[m->e.log], &r->sink.names, m->name);
        if (name == MF_STRINGS_FAILED) {
            snprintf(err, errlen, "%s: out of memory", r->logs[m->e.log]->path);
            return -1;
        }
        out[n] = m->e;
        if (out[n].type == MF_REC_THREAD)
            out[n].thread.name = name;
        else
            out[n].gpu.name = name;
        n++;
    }
    if (r->meta_head == r->sink.n_meta)
        r->meta_head = r->sink.n_meta = 0;
    return (long)n;
}

long mf_reader_next(mf_reader *r, mf_event *out, mf_sample_values *samples, size_t max,
                    uint64_t until, char *err, size_t errlen)
{
    long n = mf_merge_next(r->merge, out, samples, max, until, err, errlen);
    if (n != 0 || (r->follow && !r->finished))
        return n;
    return hand_out_meta(r, out, max, err, errlen);
}

uint64_t mf_reader_events(const mf_reader *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->logs[i]->events;
    return n;
}

void mf_reader_counts(const mf_reader *r, uint64_t *scanned, uint64_t *decoded)
{
    if (scanned)
        *scanned = r->sink.scanned;
    if (decoded)
        *decoded = mf_merge_decoded(r->merge);
}

uint32_t mf_reader_n_frames(const mf_reader *r)
{
    return (uint32_t)r->sink.n_frames;
}

const mf_symbolic_frame *mf_reader_frame(mf_reader *r, uint32_t id)
{
    if (!id || id > r->sink.n_frames)
        return NULL;
    mf_frame_ref *f = &r->sink.frames[id - 1];
    if (!f->named) {
        mf_rlog *log = r->logs[f->log];
        f->pub.function = mf_rlog_string(log, &r->sink.names, f->function);
        f->pub.file = mf_rlog_string(log, &r->sink.names, f->file);
        if (f->pub.function == MF_STRINGS_FAILED || f->pub.file == MF_STRINGS_FAILED)
            return NULL;
        f->named = 1;
    }
    return &f->pub;
}

uint32_t mf_reader_n_stacks(const mf_reader *r)
{
    return (uint32_t)r->sink.n_stacks;
}

int mf_reader_has_stacks(const mf_reader *r)
{
    return r->sink.n_stacks > 0;
}

const mf_module *mf_reader_modules(mf_reader *r, size_t i, size_t *n)
{
    static const mf_module none;
    mf_rlog *log = r->logs[i];
    *n = 0;
    if (!log->n_modules)
        return &none;
    for (; log->modules_named < log->n_modules; log->modules_named++) {
        size_t k = log->modules_named;
        if (!(log->modules[k].path = mf_rlog_text(log, &r->sink.names, log->module_paths[k])))
            return NULL;
    }
    *n = log->n_modules;
    return log->modules;
}

/* A stack's symbolic frames: the log's frame ids to the reader's (0:
 * unknown; one not read yet is remembered, so that its FRAME record, read
 * later, counts as late).  0, or -1 when out of memory. */
static int translate_frames(mf_rlog *l, uint64_t *ip, uint32_t depth)
{
    for (uint32_t i = 0; i < depth; i++)
        if (mf_stack_entry_is_frame(ip[i])) {
            uint32_t frame = mf_stack_entry_frame(ip[i]);
            uint32_t k = mf_idmap_get(&l->frames, frame);
            if (!k && mf_idmap_set(&l->frames, frame, MF_STACK_MISSED) < 0)
                return -1;
            ip[i] = mf_stack_frame_entry(k == MF_STACK_MISSED ? 0 : k);
        }
    return 0;
}

/* A STACK_NODE's stack: its frame, then its callers' (each caller's reader
 * id found once, then kept), cut at the outermost frame or at a caller the
 * log has not written (yet: mf_rlog_stack remembers it, so that its
 * record, read later, counts as late).  The depth, or -1. */
static int node_stack(mf_reader *r, uint32_t id, uint64_t *ip, uint32_t max)
{
    mf_stack_ref *c = &r->sink.stacks[id - 1];
    mf_rlog *l = r->logs[c->log];
    uint32_t full = c->depth, depth = full < max ? full : max, i = 0;
    while (i < depth) {
        ip[i++] = c->entry;
        if (!c->caller && c->offset) {
            uint32_t k = mf_rlog_stack(l, c->offset);
            if (k == MF_STRINGS_FAILED)
                return -1;
            c->caller = k;
        }
        if (!c->caller || r->sink.stacks[c->caller - 1].chunk != MF_STACK_NODE_REF)
            break;
        c = &r->sink.stacks[c->caller - 1];
    }
    if (translate_frames(l, ip, i) < 0)
        return -1;
    return (int)(i < depth ? i : full);
}

int mf_reader_stack(mf_reader *r, uint32_t id, uint32_t *log, uint64_t *ip, uint32_t max)
{
    if (id == 0 || id > r->sink.n_stacks)
        return -1;
    const mf_stack_ref *s = &r->sink.stacks[id - 1];
    mf_rlog *l = r->logs[s->log];
    if (log)
        *log = s->log;
    if (s->chunk == MF_STACK_NODE_REF)
        return node_stack(r, id, ip, max);
    uint32_t depth = s->depth < max ? s->depth : max;
    size_t position = mf_rlog_chunk_position(l, s->chunk);
    uint8_t buf[sizeof(mf_rec_stack) + 8 * MF_STACK_MAX_DEPTH];
    char err[256];
    if (position == SIZE_MAX ||
        mf_chunk_source_read_at(l->src, position, s->offset, buf,
                                sizeof(mf_rec_stack) + 8 * (size_t)depth, err, sizeof err) < 0)
        return -1;
    memcpy(ip, buf + sizeof(mf_rec_stack), 8 * (size_t)depth);
    if (translate_frames(l, ip, depth) < 0)
        return -1;
    return (int)s->depth;
}
