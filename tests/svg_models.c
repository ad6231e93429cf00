/*
 * svg_models.c - hand-built models for the memory_flow tests.  See
 * svg_models.h.
 */
#include "svg_models.h"

#include <stdlib.h>
#include <string.h>

static void *must(void *p)
{
    if (!p)
        abort();
    return p;
}

mf_model *svgt_model_new(uint64_t duration_ns, const char *program)
{
    mf_model *m = must(calloc(1, sizeof *m));
    m->t0_ns = SVGT_T0;
    m->t1_ns = SVGT_T0 + duration_ns;
    svgt_string(m, "unknown");
    svgt_string(m, "<unk>:");
    m->processes = must(calloc(1, sizeof *m->processes));
    m->n_processes = 1;
    m->processes[0].pid = 4242;
    m->processes[0].program = must(strdup(program));
    m->processes[0].finished = 1;
    return m;
}

uint32_t svgt_string(mf_model *model, const char *text)
{
    for (uint32_t i = 0; i < model->n_strings; i++)
        if (strcmp(model->strings[i], text) == 0)
            return i;
    model->strings = must(realloc(model->strings, (model->n_strings + 1) * sizeof(char *)));
    model->strings[model->n_strings] = must(strdup(text));
    return model->n_strings++;
}

size_t svgt_device(mf_model *model, uint16_t device)
{
    for (size_t i = 0; i < model->n_devices; i++)
        if (model->devices[i].device == device)
            return i;
    model->devices = must(realloc(model->devices, (model->n_devices + 1) * sizeof *model->devices));
    memset(&model->devices[model->n_devices], 0, sizeof *model->devices);
    model->devices[model->n_devices].device = device;
    return model->n_devices++;
}

void svgt_block(mf_model *model, uint16_t device, const char *scope, const char *name,
                uint64_t addr, uint64_t requested, uint64_t actual, uint64_t alloc_rel,
                uint64_t free_rel, uint32_t tid)
{
    size_t index = svgt_device(model, device);
    mf_device_model *dev = &model->devices[index];
    if (dev->n_blocks % 1024 == 0)
        dev->blocks = must(realloc(dev->blocks, (dev->n_blocks + 1024) * sizeof *dev->blocks));
    mf_block *b = &dev->blocks[dev->n_blocks++];
    memset(b, 0, sizeof *b);
    b->addr = addr;
    b->requested = requested;
    b->actual = actual;
    b->alloc_ns = SVGT_T0 + alloc_rel;
    b->free_ns = free_rel == MF_LIVE_AT_END ? MF_LIVE_AT_END : SVGT_T0 + free_rel;
    b->scope = svgt_string(model, scope);
    b->name = svgt_string(model, name);
    b->tid = tid;
    b->pid = 4242;
    b->device = device;
}

mf_block *svgt_last_block(mf_model *model, uint16_t device)
{
    mf_device_model *dev = &model->devices[svgt_device(model, device)];
    return dev->n_blocks ? &dev->blocks[dev->n_blocks - 1] : NULL;
}

void svgt_thread(mf_model *model, uint32_t tid, const char *name)
{
    model->threads = must(realloc(model->threads, (model->n_threads + 1) * sizeof *model->threads));
    model->threads[model->n_threads++] = (mf_thread_info){ tid, 4242, svgt_string(model, name) };
}

void svgt_snapshot(mf_model *model, uint16_t device, uint64_t time_rel, uint64_t value)
{
    size_t index = svgt_device(model, device);
    mf_device_model *dev = &model->devices[index];
    dev->snapshots = must(realloc(dev->snapshots, (dev->n_snapshots + 1) * sizeof *dev->snapshots));
    mf_snapshot *s = &dev->snapshots[dev->n_snapshots++];
    memset(s, 0, sizeof *s);
    s->time_ns = SVGT_T0 + time_rel;
    if (MF_DEVICE_KIND(device) == MF_DEVICE_GPU)
        s->value[MF_SAMPLE_GPU_USED] = value;
    else
        s->value[MF_SAMPLE_ACTIVE] = value;
}

typedef struct change {
    uint64_t time;
    int64_t bytes;
} change;

static int by_time(const void *a, const void *b)
{
    const change *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;   /* frees first */
}

static int by_alloc(const void *a, const void *b)
{
    const mf_block *x = a, *y = b;
    if (x->alloc_ns != y->alloc_ns)
        return x->alloc_ns < y->alloc_ns ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void finish_device(mf_device_model *dev)
{
    if (dev->n_blocks > 1)
        qsort(dev->blocks, dev->n_blocks, sizeof *dev->blocks, by_alloc);
    change *ch = must(malloc((2 * dev->n_blocks + 1) * sizeof *ch));
    size_t n = 0;
    dev->min_addr = UINT64_MAX;
    dev->min_size = UINT64_MAX;
    for (size_t i = 0; i < dev->n_blocks; i++) {
        const mf_block *b = &dev->blocks[i];
        ch[n++] = (change){ b->alloc_ns, (int64_t)b->requested };
        if (b->free_ns != MF_LIVE_AT_END) {
            ch[n++] = (change){ b->free_ns, -(int64_t)b->requested };
            dev->free_count++;
        } else {
            dev->live_bytes_end += b->requested;
            dev->live_count_end++;
        }
        dev->alloc_count++;
        dev->alloc_bytes += b->requested;
        dev->min_size = b->requested < dev->min_size ? b->requested : dev->min_size;
        dev->max_size = b->requested > dev->max_size ? b->requested : dev->max_size;
        dev->min_addr = b->addr < dev->min_addr ? b->addr : dev->min_addr;
        uint64_t end = b->addr + (b->actual ? b->actual : b->requested);
        dev->max_addr = end > dev->max_addr ? end : dev->max_addr;
    }
    if (n > 1)
        qsort(ch, n, sizeof *ch, by_time);
    free(dev->occupancy); /* finishing again after more blocks: the curve anew */
    dev->occupancy = must(malloc((n + 1) * sizeof *dev->occupancy));
    uint64_t live = 0;
    for (size_t i = 0; i < n; i++) {
        live += (uint64_t)ch[i].bytes;
        dev->occupancy[i] = (mf_point){ ch[i].time, live, live };
        if (live > dev->peak_bytes) {
            dev->peak_bytes = live;
            dev->peak_time_ns = ch[i].time;
        }
    }
    dev->n_occupancy = n;
    free(ch);
}

void svgt_finish(mf_model *model)
{
    for (size_t i = 0; i < model->n_devices; i++)
        finish_device(&model->devices[i]);
}

void svgt_model_free(mf_model *model)
{
    for (uint32_t i = 0; i < model->n_strings; i++)
        free(model->strings[i]);
    free(model->strings);
    for (size_t i = 0; i < model->n_devices; i++) {
        free(model->devices[i].blocks);
        free(model->devices[i].occupancy);
        free(model->devices[i].snapshots);
    }
    free(model->devices);
    free(model->threads);
    for (size_t i = 0; i < model->n_processes; i++)
        free(model->processes[i].program);
    free(model->processes);
    free(model);
}

mf_model *svgt_model_basic(void)
{
    mf_model *m = svgt_model_new(1000 * SVGT_MS, "./mlp --epochs 1 <&\">");
    uint16_t cpu = MF_DEVICE(MF_DEVICE_CPU, 0);
    svgt_block(m, cpu, "net_dense0:", "weight", SVGT_A_ADDR, 256 * 1024, 256 * 1024,
               100 * SVGT_MS, 600 * SVGT_MS, 101);
    svgt_block(m, cpu, "net_dense1:", "bias", SVGT_B_ADDR, 256 * 1024 - 8, 256 * 1024,
               200 * SVGT_MS, MF_LIVE_AT_END, 101);
    svgt_block(m, cpu, SVGT_WEIRD_SCOPE, "x&y", SVGT_C_ADDR, 1024 * 1024, 1024 * 1024,
               300 * SVGT_MS, 800 * SVGT_MS, 102);
    svgt_thread(m, 101, "main");
    svgt_thread(m, 102, "worker <1>");
    svgt_snapshot(m, cpu, 150 * SVGT_MS, 400 * 1024);
    svgt_snapshot(m, cpu, 350 * SVGT_MS, 1800 * 1024);
    svgt_snapshot(m, cpu, 700 * SVGT_MS, 1400 * 1024);
    svgt_finish(m);
    return m;
}

mf_model *svgt_model_many(size_t n)
{
    static const char *const scopes[] = { "net_dense0:", "net_dense1:", "net_relu0:",
                                          "data:", "optimizer:", "<unk>:" };
    mf_model *m = svgt_model_new(10000 * SVGT_MS, "./churn");
    uint16_t cpu = MF_DEVICE(MF_DEVICE_CPU, 0);
    const size_t slots = 2000;
    size_t per_slot = (n + slots - 1) / slots;
    uint64_t step = 10000 * SVGT_MS / (per_slot + 1);
    uint64_t seed = 12345;
    for (size_t i = 0; i < n; i++) {
        size_t slot = i % slots, k = i / slots;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t size = 16 + (seed >> 33) % 4000;
        uint64_t alloc = k * step + slot;
        uint64_t free_rel = (k + 1 == per_slot && slot % 7 == 0) ? MF_LIVE_AT_END
                            : alloc + step / 2 + (seed >> 40) % (step / 2);
        svgt_block(m, cpu, scopes[(seed >> 20) % 6], "t", 0x555555560000ull + slot * 4096, size,
                   (size + 15) & ~15ull, alloc, free_rel, 100 + (uint32_t)(slot % 4));
    }
    for (size_t i = 0; i < 8; i++)
        svgt_block(m, cpu, "data:", "batch", 0x7f1200000000ull + i * (64ull << 20), 64ull << 20,
                   64ull << 20, i * 1000 * SVGT_MS, i * 1000 * SVGT_MS + 900 * SVGT_MS, 100);
    svgt_finish(m);
    return m;
}
