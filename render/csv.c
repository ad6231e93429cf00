/*
 * csv.c - MXNet's gpu_memory_profile CSV from the model: the GPU blocks of
 * one process never freed at the model's end (still live, or held when the
 * process ended), sorted by attribute name (scope + name, or a named
 * tensor's qualified name), every field quoted (a quote inside doubled,
 * invalid UTF-8 as U+FFFD).  On a GPU whose memory came in tensors
 * (sub-blocks of device memory: PyTorch's, from its allocator history) the
 * rows are the tensors, not the segments that hold them, with Reuse? 1 for
 * a tensor the allocator served from its cache, as MXNet's pool does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "outfile.h"
#include "csv.h"

/* A live GPU block with its attribute (scope + name) composed. */
typedef struct csv_row {
    const mf_block *block;
    char *attribute;
} csv_row;

static int is_gpu(uint16_t device)
{
    return MF_DEVICE_KIND(device) == MF_DEVICE_GPU;
}

static int compare_rows(const void *pa, const void *pb)
{
    const csv_row *a = pa, *b = pb;
    int c = strcmp(a->attribute, b->attribute);
    if (c)
        return c;
    if (a->block->alloc_ns != b->block->alloc_ns)
        return a->block->alloc_ns < b->block->alloc_ns ? -1 : 1;
    return a->block->addr < b->block->addr ? -1 : a->block->addr > b->block->addr;
}

/* MXNet's attribute: scope + name ("net:dense0:" + "in_arg:weight"); a
 * tensor named with its role (memflow.torch) has its qualified name
 * ("net:fc1:weight") alone. */
static char *attribute_of(const mf_model *m, const mf_block *blk)
{
    const char *scope = (blk->role & MF_ROLE_NAMED) ? "" : mf_model_string(m, blk->scope);
    const char *name = mf_model_string(m, blk->name);
    size_t a = strlen(scope), n = strlen(name);
    char *s = malloc(a + n + 1);
    if (s) {
        memcpy(s, scope, a);
        memcpy(s + a, name, n + 1);
    }
    return s;
}

/* Whether device's memory came in tensors (sub-blocks of device memory). */
static int has_tensors(const mf_model *m, uint16_t device)
{
    for (size_t i = 0; i < m->n_gpu_sub_live; i++)
        if (m->gpu_sub_live[i].device == device &&
            (m->gpu_sub_live[i].flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT == MF_MEM_DEVICE)
            return 1;
    const mf_device_model *d = mf_model_device(m, device);
    return d && d->sub.alloc_count && d->n_sub_occupancy;
}

/* Add the blocks of list (n) that belong to pid: GPU blocks on devices
 * without tensors (tensors: 0), or tensors (1). */
static int add_rows(const mf_model *m, uint32_t pid, const mf_block *list, size_t n, int tensors,
                    csv_row *rows, size_t *k)
{
    for (size_t i = 0; i < n; i++) {
        const mf_block *blk = &list[i];
        if (blk->pid != pid || !is_gpu(blk->device) || has_tensors(m, blk->device) != tensors)
            continue;
        rows[*k].block = blk;
        if (!(rows[(*k)++].attribute = attribute_of(m, blk)))
            return -1;
    }
    return 0;
}

/* The GPU blocks (tensors) of pid never freed (live at the end, or held
 * until the process ended), sorted; NULL (and *n = 0) when out of memory. */
static csv_row *live_rows(const mf_model *m, uint32_t pid, size_t *n)
{
    size_t k = 0, all = m->n_gpu_live + m->n_gpu_sub_live;
    csv_row *rows = calloc(all ? all : 1, sizeof *rows);
    *n = 0;
    if (!rows)
        return NULL;
    if (add_rows(m, pid, m->gpu_live, m->n_gpu_live, 0, rows, &k) < 0 ||
        add_rows(m, pid, m->gpu_sub_live, m->n_gpu_sub_live, 1, rows, &k) < 0)
        goto oom;
    qsort(rows, k, sizeof *rows, compare_rows);
    *n = k;
    return rows;
oom:
    for (size_t i = 0; i < k; i++)
        free(rows[i].attribute);
    free(rows);
    return NULL;
}

static void write_row(mf_sink *out, const csv_row *r)
{
    const mf_block *blk = r->block;
    mf_sink_putc(out, '"');
    mf_escape_csv(out, r->attribute);
    mf_sink_printf(out, "\",\"%llu\",\"%u\",\"%llu\",\"%d\"\n",
                   (unsigned long long)blk->requested, MF_DEVICE_INDEX(blk->device),
                   (unsigned long long)blk->actual, (blk->flags & MF_FLAG_REUSED) ? 1 : 0);
}

int mf_csv_write_sink(const mf_model *model, uint32_t pid, mf_sink *out)
{
    size_t n;
    csv_row *rows = live_rows(model, pid, &n);
    if (!rows)
        return -1;
    mf_sink_puts(out, MF_CSV_HEADER);
    for (size_t i = 0; i < n; i++) {
        write_row(out, &rows[i]);
        free(rows[i].attribute);
    }
    free(rows);
    return out->error ? -1 : 0;
}

int mf_csv_write(const mf_model *model, uint32_t pid, FILE *out)
{
    mf_sink sink = { 0 };
    int rc = mf_csv_write_sink(model, pid, &sink);
    if (rc == 0 && fwrite(sink.buf, 1, sink.len, out) != sink.len)
        rc = -1;
    mf_sink_free(&sink);
    return rc;
}

int mf_csv_process_has_gpu(const mf_model *model, uint32_t pid)
{
    for (size_t i = 0; i < model->n_devices; i++) {
        const mf_device_model *d = &model->devices[i];
        for (size_t j = 0; is_gpu(d->device) && j < d->n_views; j++)
            if (d->views[j]->pid == pid && d->views[j]->alloc_count)
                return 1;
    }
    return 0;
}

static int write_file(const mf_model *model, uint32_t pid, const char *path, char *err,
                      size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    if (mf_csv_write_sink(model, pid, &o.sink) < 0 && !o.sink.error) {
        snprintf(err, errlen, "%s: cannot write the GPU memory CSV: out of memory", path);
        mf_outfile_abort(&o);
        return -1;
    }
    return mf_outfile_commit(&o, err, errlen);
}

int mf_csv_write_all(const mf_model *model, const char *dir, const char *prefix, int *written,
                     char *err, size_t errlen)
{
    if (written)
        *written = 0;
    for (size_t i = 0; i < model->n_processes; i++) {
        uint32_t pid = model->processes[i].pid;
        int seen = 0;             /* a pid's images share one file */
        for (size_t j = 0; j < i && !seen; j++)
            seen = model->processes[j].pid == pid;
        if (seen || !mf_csv_process_has_gpu(model, pid))
            continue;
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s-pid_%u.csv", dir,
                 prefix && *prefix ? prefix : "gpu_memory_profile", pid);
        if (write_file(model, pid, path, err, errlen) < 0)
            return -1;
        if (written)
            (*written)++;
    }
    return 0;
}
