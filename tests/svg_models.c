/*
 * svg_models.c - scenes for the memory_flow tests, fed to the real model
 * (see svg_models.h).
 */
#include "svg_models.h"

#include <stdlib.h>
#include <string.h>

typedef struct scene_thread {
    uint32_t tid;
    char *name;
} scene_thread;

typedef struct scene_sample {
    uint16_t device;
    uint64_t time, value;
} scene_sample;

struct svgt_scene {
    uint64_t duration;
    char *program;
    mf_block *blocks;        /* scope and name are ids of texts */
    size_t n_blocks, cap_blocks;
    mf_strings *texts;
    scene_thread *threads;
    size_t n_threads;
    scene_sample *samples;
    size_t n_samples;
};

static mf_block *many_blocks;   /* the last svgt_model_many scene's blocks */
static size_t n_many_blocks;

static void *must(void *p)
{
    if (!p)
        abort();
    return p;
}

svgt_scene *svgt_model_new(uint64_t duration_ns, const char *program)
{
    svgt_scene *s = must(calloc(1, sizeof *s));
    s->duration = duration_ns;
    s->program = must(strdup(program));
    s->texts = must(mf_strings_new());
    return s;
}

static uint32_t text_of(svgt_scene *s, const char *text)
{
    uint32_t id = mf_strings_intern(s->texts, text, strlen(text));
    if (id == MF_STRINGS_FAILED)
        abort();
    return id;
}

void svgt_block(svgt_scene *s, uint16_t device, const char *scope, const char *name,
                uint64_t addr, uint64_t requested, uint64_t actual, uint64_t alloc_rel,
                uint64_t free_rel, uint32_t tid)
{
    if (s->n_blocks == s->cap_blocks) {
        s->cap_blocks = s->cap_blocks ? 2 * s->cap_blocks : 1024;
        s->blocks = must(realloc(s->blocks, s->cap_blocks * sizeof *s->blocks));
    }
    mf_block *b = &s->blocks[s->n_blocks++];
    memset(b, 0, sizeof *b);
    b->addr = addr;
    b->requested = requested;
    b->actual = actual;
    b->alloc_ns = SVGT_T0 + alloc_rel;
    b->free_ns = free_rel == MF_LIVE_AT_END ? MF_LIVE_AT_END : SVGT_T0 + free_rel;
    b->scope = text_of(s, scope);
    b->name = text_of(s, name);
    b->tid = tid;
    b->pid = SVGT_PID;
    b->device = device;
}

mf_block *svgt_last_block(svgt_scene *s)
{
    return s->n_blocks ? &s->blocks[s->n_blocks - 1] : NULL;
}

void svgt_thread(svgt_scene *s, uint32_t tid, const char *name)
{
    s->threads = must(realloc(s->threads, (s->n_threads + 1) * sizeof *s->threads));
    s->threads[s->n_threads++] = (scene_thread){ tid, must(strdup(name)) };
}

void svgt_snapshot(svgt_scene *s, uint16_t device, uint64_t time_rel, uint64_t value)
{
    s->samples = must(realloc(s->samples, (s->n_samples + 1) * sizeof *s->samples));
    s->samples[s->n_samples++] = (scene_sample){ device, SVGT_T0 + time_rel, value };
}

/* ---- events ------------------------------------------------------------------ */

typedef struct timed {
    mf_event e;
    mf_sample_values values;
    size_t order;
} timed;

static int by_time(const void *a, const void *b)
{
    const timed *x = a, *y = b;
    if (x->e.time_ns != y->e.time_ns)
        return x->e.time_ns < y->e.time_ns ? -1 : 1;
    if ((x->e.type == MF_REC_FREE) != (y->e.type == MF_REC_FREE))
        return x->e.type == MF_REC_FREE ? -1 : 1;     /* frees first */
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The log (process image) of pid: one per distinct pid, SVGT_PID's first. */
static uint16_t log_of(uint32_t *pids, size_t *n, uint32_t pid)
{
    for (size_t i = 0; i < *n; i++)
        if (pids[i] == pid)
            return (uint16_t)i;
    pids[*n] = pid;
    return (uint16_t)(*n)++;
}

static uint32_t intern(mf_model *m, const char *text)
{
    return mf_strings_intern(m->strings, text, strlen(text));
}

mf_model *svgt_finish(svgt_scene *s)
{
    char err[256];
    mf_model *m = must(mf_model_new(NULL, err, sizeof err));
    size_t cap = 2 * s->n_blocks + s->n_samples + 2, n = 0, n_pids = 0;
    timed *ev = must(calloc(cap, sizeof *ev));
    uint32_t *pids = must(calloc(s->n_blocks + 2, sizeof *pids));
    log_of(pids, &n_pids, SVGT_PID);
    uint32_t n_texts = mf_strings_count(s->texts);
    uint32_t *ids = must(malloc(n_texts * sizeof *ids));   /* scene text id -> model id */
    for (uint32_t i = 0; i < n_texts; i++)
        ids[i] = intern(m, mf_strings_get(s->texts, i));
    for (size_t i = 0; i < s->n_blocks; i++) {
        const mf_block *b = &s->blocks[i];
        uint16_t log = log_of(pids, &n_pids, b->pid);
        uint32_t scope = b->scope < n_texts ? ids[b->scope] : b->scope;
        ev[n] = (timed){ .e = { .type = MF_REC_ALLOC, .time_ns = b->alloc_ns, .tid = b->tid,
                                .device = b->device, .log = log,
                                .alloc = { .addr = b->addr, .requested = b->requested,
                                           .actual = b->actual, .scope = scope,
                                           .name = ids[b->name], .flags = b->flags } },
                         .order = n };
        n++;
        if (b->free_ns != MF_LIVE_AT_END) {
            ev[n] = (timed){ .e = { .type = MF_REC_FREE, .time_ns = b->free_ns,
                                    .device = b->device, .log = log,
                                    .free = { .addr = b->addr, .flags = b->flags } },
                             .order = n };
            n++;
        }
    }
    for (size_t i = 0; i < s->n_samples; i++) {
        timed *t = &ev[n];
        *t = (timed){ .e = { .type = MF_REC_SAMPLE, .time_ns = s->samples[i].time,
                             .device = s->samples[i].device },
                      .order = n };
        t->values.value[MF_DEVICE_KIND(s->samples[i].device) == MF_DEVICE_GPU
                            ? MF_SAMPLE_GPU_USED : MF_SAMPLE_ACTIVE] = s->samples[i].value;
        n++;
    }
    /* the scene's start and end: events the model keeps only as times */
    ev[n++] = (timed){ .e = { .type = MF_REC_STATE, .time_ns = SVGT_T0 }, .order = 0 };
    ev[n] = (timed){ .e = { .type = MF_REC_STATE, .time_ns = SVGT_T0 + s->duration },
                     .order = n };
    n++;
    qsort(ev, n, sizeof *ev, by_time);
    for (size_t i = 0; i < n_pids; i++) {
        mf_log_info info = { .path = "scene.mfl", .program = s->program, .parent = -1,
                             .prev_image = -1, .next_image = -1 };
        info.header.pid = pids[i];
        info.header.flags = MF_HEADER_FINISHED;
        info.header.start_mono_ns = SVGT_T0;
        if (mf_model_set_process(m, (uint32_t)i, &info) < 0)
            abort();
    }
    for (size_t i = 0; i < s->n_threads; i++) {
        mf_event t = { .type = MF_REC_THREAD, .tid = s->threads[i].tid,
                       .thread.name = intern(m, s->threads[i].name) };
        if (mf_model_feed(m, &t, 1, NULL) < 0)
            abort();
    }
    for (size_t i = 0; i < n; i++)
        if (mf_model_feed(m, &ev[i].e, 1, &ev[i].values) < 0)
            abort();
    if (mf_model_settle(m) < 0)
        abort();
    free(ev);
    free(pids);
    free(ids);
    for (size_t i = 0; i < s->n_threads; i++)
        free(s->threads[i].name);
    mf_strings_free(s->texts);
    free(s->threads);
    free(s->samples);
    free(s->program);
    free(many_blocks);
    many_blocks = s->blocks;
    n_many_blocks = s->n_blocks;
    free(s);
    return m;
}

void svgt_model_free(mf_model *model)
{
    mf_model_free(model);
}

const mf_block *svgt_many_blocks(size_t *n)
{
    *n = n_many_blocks;
    return many_blocks;
}

svgt_scene *svgt_scene_basic(void)
{
    svgt_scene *s = svgt_model_new(1000 * SVGT_MS, "./mlp --epochs 1 <&\">");
    uint16_t cpu = MF_DEVICE(MF_DEVICE_CPU, 0);
    svgt_block(s, cpu, "net_dense0:", "weight", SVGT_A_ADDR, 256 * 1024, 256 * 1024,
               100 * SVGT_MS, 600 * SVGT_MS, 101);
    svgt_block(s, cpu, "net_dense1:", "bias", SVGT_B_ADDR, 256 * 1024 - 8, 256 * 1024,
               200 * SVGT_MS, MF_LIVE_AT_END, 101);
    svgt_block(s, cpu, SVGT_WEIRD_SCOPE, "x&y", SVGT_C_ADDR, 1024 * 1024, 1024 * 1024,
               300 * SVGT_MS, 800 * SVGT_MS, 102);
    svgt_thread(s, 101, "main");
    svgt_thread(s, 102, "worker <1>");
    svgt_snapshot(s, cpu, 150 * SVGT_MS, 400 * 1024);
    svgt_snapshot(s, cpu, 350 * SVGT_MS, 1800 * 1024);
    svgt_snapshot(s, cpu, 700 * SVGT_MS, 1400 * 1024);
    return s;
}

mf_model *svgt_model_basic(void)
{
    return svgt_finish(svgt_scene_basic());
}

mf_model *svgt_model_many(size_t n)
{
    static const char *const scopes[] = { "net_dense0:", "net_dense1:", "net_relu0:",
                                          "data:", "optimizer:", "<unk>:" };
    svgt_scene *s = svgt_model_new(10000 * SVGT_MS, "./churn");
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
        svgt_block(s, cpu, scopes[(seed >> 20) % 6], "t", 0x555555560000ull + slot * 4096, size,
                   (size + 15) & ~15ull, alloc, free_rel, 100 + (uint32_t)(slot % 4));
    }
    for (size_t i = 0; i < 8; i++)
        svgt_block(s, cpu, "data:", "batch", 0x7f1200000000ull + i * (64ull << 20), 64ull << 20,
                   64ull << 20, i * 1000 * SVGT_MS, i * 1000 * SVGT_MS + 900 * SVGT_MS, 100);
    return svgt_finish(s);
}
