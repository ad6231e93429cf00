/*
 * check_model.c - the model (analyze/model*.c), statistics
 * (analyze/stats/statistics.c, render/stats*.c), CSV (render/csv.c) and
 * memflow_dump/dumps (runtime/dump.c, answered by memflow serve) on REAL logs:
 * each test starts the real recorder into a scratch folder, records known
 * blocks through the public API (memflow_scope_push, memflow_record_alloc,
 * memflow_record_free) or the recorder's capture entry points, closes the
 * log, reads it back with the streaming reader and checks exact numbers.
 * Check forks each test, so every test has its own fresh recorder.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "recorder.h"
#include "memflow.h"
#include "config.h"
#include "csv.h"
#include "log_in_memory.h"
#include "model.h"
#include "stats.h"

#define CPU0 MF_DEVICE(MF_DEVICE_CPU, 0)
#define GPU0 MF_DEVICE(MF_DEVICE_GPU, 0)
#define GPU1 MF_DEVICE(MF_DEVICE_GPU, 1)
#define P(x) ((const void *)(uintptr_t)(x))

static char scratch[1024];

/* Record into a fresh scratch folder named after the test. */
static void start_recording(const char *test)
{
    const char *top = getenv("top_builddir");
    char cmd[4096];
    snprintf(scratch, sizeof scratch, "%s/tests/out/check_model/%s", top ? top : ".", test);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", scratch, scratch);
    ck_assert_int_eq(system(cmd), 0);
    const char *keys[] = { "path", "formats" };
    const char *vals[] = { scratch, "stats.json,profile.json" };
    ck_assert_int_eq(memflow_set_config(2, keys, vals), 0);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
}

/* Close the log and build the model of it (up to until_rel ns). */
static mf_model *finish_and_load(uint64_t until_rel)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_recorder_finish();
    const char *paths[] = { path };
    mf_model *m = mf_model_load(paths, 1, until_rel, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

/* The nth block (by allocation time) at addr of process pid on the device
 * (every block of these small tests is kept whole). */
static const mf_block *block_of(const mf_model *m, uint16_t device, uint32_t pid, uint64_t addr,
                                int nth)
{
    const mf_view *v = mf_model_view(m, device, pid);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(v->blocks_full, 0);
    const mf_block *found[16];
    int n = 0;
    for (size_t i = 0; i < v->n_blocks; i++)
        if (v->blocks[i].addr == addr && n < 16) {
            int k = n++;
            while (k > 0 && found[k - 1]->alloc_ns > v->blocks[i].alloc_ns) {
                found[k] = found[k - 1];
                k--;
            }
            found[k] = &v->blocks[i];
        }
    ck_assert_msg(nth < n, "no block %d at 0x%llx", nth, (unsigned long long)addr);
    return found[nth];
}

static const mf_block *block_at(const mf_model *m, uint16_t device, uint64_t addr, int nth)
{
    return block_of(m, device, (uint32_t)getpid(), addr, nth);
}

static const mf_scope_stat *scope_named(const mf_model *m, const mf_device_model *d,
                                        const char *name)
{
    for (size_t i = 0; i < d->n_scopes; i++)
        if (strcmp(mf_model_string(m, d->scopes[i].scope), name) == 0)
            return &d->scopes[i];
    ck_abort_msg("no scope '%s'", name);
    return NULL;
}

/* Close the log and build the model of its window of steps [from, to]. */
static mf_model *finish_and_load_steps(uint64_t from_step, uint64_t to_step)
{
    char path[4096], err[1024];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_recorder_finish();
    const char *paths[] = { path };
    mf_load_options opt = { .until_rel_ns = UINT64_MAX,
                            .model = { .from_step = from_step, .to_step = to_step } };
    int rc;
    mf_model *m = mf_model_load_opts(paths, 1, &opt, &rc, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    return m;
}

/* The recording shared by several tests: two scopes on cpu/0. */
static void record_cpu_story(void)
{
    memflow_scope_push("net_dense0", 0);
    ck_assert_int_eq(memflow_record_alloc("cpu/0", P(0x1000), 100, 128, "w", 0), 0);
    memflow_record_alloc("cpu/0", P(0x2000), 300, 320, NULL, 0);
    memflow_scope_pop();
    memflow_scope_push("relu", 0);
    memflow_record_alloc("cpu/0", P(0x3000), 50, 64, NULL, 0);
    memflow_record_free("cpu/0", P(0x2000));              /* live 150 */
    memflow_record_free("cpu/0", P(0x9999));              /* never allocated */
    memflow_record_alloc("cpu/0", P(0x4000), 1000, 1024, "big", 0); /* live 1150: peak */
    memflow_record_free("cpu/0", P(0x1000));              /* live 1050 */
    memflow_scope_pop();
}

/* A naming record (memflow.torch's) on block addr of cpu/0: name and role. */
static void name_block(uint64_t addr, const char *name, unsigned role)
{
    mf_recorder_trace(MF_TRACE_BLOCK_NAME, 0, addr, 0, mf_recorder_intern(name, strlen(name)),
                      CPU0 | role << 16);
}

static void step_mark(uint64_t n)
{
    mf_recorder_trace(MF_TRACE_STEP, 0, n, 0, mf_recorder_intern("adam", 4), MF_MARKER_PROCESS);
}

/* The role statistics of role on d. */
static const mf_scope_stat *role_of(const mf_device_model *d, unsigned role)
{
    for (size_t i = 0; i < d->n_roles; i++)
        if (d->roles[i].scope == role)
            return &d->roles[i];
    ck_abort_msg("no role %u", role);
    return NULL;
}

/*
 * Roles: named ones from naming records (even after the peak: the block
 * moves, its share at the peak too), temporary (freed within its step),
 * other (held across a step), unknown and held from before training (the
 * first naming record); bytes by role and by name at the peak, exactly.
 */
START_TEST(roles_at_peak)
{
    start_recording("roles_at_peak");
    memflow_record_alloc("cpu/0", P(0x1000), 1000, 1024, NULL, 0);   /* import */
    memflow_record_alloc("cpu/0", P(0x2000), 400, 400, NULL, 0);
    name_block(0x2000, "net:w", MF_ROLE_PARAMETER);                   /* training begins */
    step_mark(1);
    memflow_record_alloc("cpu/0", P(0x3000), 100, 128, NULL, 0);
    memflow_record_alloc("cpu/0", P(0x4000), 400, 400, NULL, 0);      /* peak 1900 */
    memflow_record_free("cpu/0", P(0x3000));                          /* a temporary */
    name_block(0x4000, "net:w.grad", MF_ROLE_GRADIENT);               /* after the peak */
    memflow_record_alloc("cpu/0", P(0x5000), 50, 64, NULL, 0);
    step_mark(2);
    memflow_record_free("cpu/0", P(0x5000));                          /* held across a step */
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->peak_bytes, 1900);
    ck_assert_uint_eq(d->n_roles, 5);
    const unsigned roles[] = { MF_ROLE_UNKNOWN, MF_ROLE_PARAMETER, MF_ROLE_GRADIENT,
                               MF_ROLE_TEMPORARY, MF_ROLE_OTHER };
    const uint64_t at_peak[] = { 1000, 400, 400, 100, 0 }, allocated[] = { 1000, 400, 400, 100, 50 };
    for (int i = 0; i < 5; i++) {
        const mf_scope_stat *r = role_of(d, roles[i]);
        ck_assert_uint_eq(r->at_peak_bytes, at_peak[i]);
        ck_assert_uint_eq(r->at_peak_count, at_peak[i] ? 1 : 0);
        ck_assert_uint_eq(r->alloc_count, 1);
        ck_assert_uint_eq(r->alloc_bytes, allocated[i]);
    }
    ck_assert_uint_eq(block_at(m, CPU0, 0x1000, 0)->role,
                      MF_ROLE_UNKNOWN | MF_ROLE_BEFORE_TRAINING);
    ck_assert_uint_eq(block_at(m, CPU0, 0x2000, 0)->role, MF_ROLE_PARAMETER | MF_ROLE_NAMED);
    ck_assert_uint_eq(block_at(m, CPU0, 0x3000, 0)->role, MF_ROLE_TEMPORARY);
    ck_assert_uint_eq(block_at(m, CPU0, 0x4000, 0)->role, MF_ROLE_GRADIENT | MF_ROLE_NAMED);
    ck_assert_uint_eq(block_at(m, CPU0, 0x5000, 0)->role, MF_ROLE_OTHER);
    ck_assert_str_eq(mf_model_string(m, block_at(m, CPU0, 0x4000, 0)->name), "net:w.grad");
    /* by name at the peak: no name 1100 (2 blocks), net:w 400, net:w.grad 400 */
    mf_stats st;
    ck_assert_int_eq(mf_stats_compute(m, MF_SORT_TOTAL, 0, 0, &st), 0);
    const mf_stats_peak *p = &st.peaks[0];
    ck_assert_uint_eq(p->n_by_name, 3);
    ck_assert_str_eq(p->by_name[0].name, "(no name)");
    ck_assert_uint_eq(p->by_name[0].bytes, 1100);
    ck_assert_uint_eq(p->by_name[0].blocks, 2);
    ck_assert_str_eq(p->by_name[1].name, "net:w");
    ck_assert_str_eq(p->by_name[2].name, "net:w.grad");
    ck_assert_uint_eq(p->by_name[2].bytes, 400);
    ck_assert_uint_eq(p->n_by_role, 4);
    ck_assert_str_eq(p->by_role[0].name, "unknown");
    ck_assert_str_eq(p->by_role[3].name, "temporary");
    mf_stats_free(&st);
    mf_model_free(m);
}
END_TEST

/*
 * A window of steps counts exactly what happens inside it: the blocks live
 * on entry held (not allocated), a free of one counted, allocations inside,
 * what happens after its last step left out; each step's peak.
 */
START_TEST(step_window_counts_inside)
{
    start_recording("step_window_counts_inside");
    memflow_record_alloc("cpu/0", P(0xa000), 100, 128, NULL, 0);     /* A: live on entry */
    memflow_record_alloc("cpu/0", P(0xb000), 200, 256, NULL, 0);     /* B: live on entry */
    memflow_record_alloc("cpu/0", P(0xe000), 5000, 5120, NULL, 0);
    step_mark(1);
    memflow_record_free("cpu/0", P(0xe000));                         /* before the window */
    step_mark(2);                                                    /* the window: 300 held */
    memflow_record_alloc("cpu/0", P(0xc000), 400, 512, NULL, 0);     /* C: 700 */
    memflow_record_free("cpu/0", P(0xa000));                         /* 600 */
    step_mark(3);
    memflow_record_free("cpu/0", P(0xc000));                         /* 200 */
    memflow_record_alloc("cpu/0", P(0xd000), 800, 1024, NULL, 0);    /* D: 1000, the peak */
    step_mark(4);                                                    /* after the window */
    memflow_record_free("cpu/0", P(0xb000));
    memflow_record_alloc("cpu/0", P(0xf000), 9000, 9216, NULL, 0);
    mf_model *m = finish_and_load_steps(2, 3);
    ck_assert_int_eq(m->window_missing, 0);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->entry_count, 2);
    ck_assert_uint_eq(d->entry_bytes, 300);
    ck_assert_uint_eq(d->alloc_count, 2);
    ck_assert_uint_eq(d->alloc_bytes, 1200);
    ck_assert_uint_eq(d->free_count, 2);
    ck_assert_uint_eq(d->unknown_frees, 0);
    ck_assert_uint_eq(d->peak_bytes, 1000);
    ck_assert_uint_eq(d->live_bytes_end, 1000);
    ck_assert_uint_eq(d->live_count_end, 2);
    ck_assert(block_at(m, CPU0, 0xa000, 0)->entered);
    ck_assert_uint_eq(block_at(m, CPU0, 0xa000, 0)->alloc_ns, m->since_ns);
    ck_assert(!block_at(m, CPU0, 0xc000, 0)->entered);
    ck_assert_uint_eq(d->n_steps, 2);
    const uint64_t number[] = { 2, 3 }, start[] = { 300, 600 }, peak[] = { 700, 1000 },
                   allocated[] = { 400, 800 };
    for (int i = 0; i < 2; i++) {
        ck_assert_uint_eq(d->steps[i].number, number[i]);
        ck_assert_uint_eq(d->steps[i].held_start, start[i]);
        ck_assert_uint_eq(d->steps[i].peak_bytes, peak[i]);
        ck_assert_uint_eq(d->steps[i].alloc_count, 1);
        ck_assert_uint_eq(d->steps[i].alloc_bytes, allocated[i]);
    }
    ck_assert_uint_eq(d->steps[0].end_ns, d->steps[1].start_ns);
    ck_assert_uint_eq(m->n_step_marks, 2);
    ck_assert_uint_eq(m->until_ns, m->t1_ns);
    mf_model_free(m);
    /* a step the log never marked: no window */
    start_recording("step_window_missing");
    step_mark(1);
    m = finish_and_load_steps(7, 0);
    ck_assert_int_eq(m->window_missing, 1);
    mf_model_free(m);
}
END_TEST

START_TEST(cpu_blocks_peak_and_end)
{
    start_recording("cpu_blocks_peak_and_end");
    record_cpu_story();
    mf_model *m = finish_and_load(UINT64_MAX);
    ck_assert_uint_eq(m->n_devices, 1);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(d->alloc_count, 4);
    ck_assert_uint_eq(d->free_count, 2);
    ck_assert_uint_eq(d->unknown_frees, 1);
    ck_assert_uint_eq(d->alloc_bytes, 1450);
    ck_assert_uint_eq(d->alloc_actual_bytes, 1536);
    ck_assert_uint_eq(d->peak_bytes, 1150);
    ck_assert_uint_eq(d->peak_time_ns, block_at(m, CPU0, 0x4000, 0)->alloc_ns);
    ck_assert_uint_eq(d->live_bytes_end, 1050);
    ck_assert_uint_eq(d->live_count_end, 2);
    ck_assert_uint_eq(d->min_size, 50);
    ck_assert_uint_eq(d->max_size, 1000);
    ck_assert_uint_eq(d->min_addr, 0x1000);
    ck_assert_uint_eq(d->max_addr, 0x4000 + 1024);
    ck_assert_uint_eq(d->replaced_blocks, 0);
    /* one occupancy point per alloc and matched free, in time order */
    ck_assert_uint_eq(d->n_occupancy, 6);
    const uint64_t live[] = { 100, 400, 450, 150, 1150, 1050 };
    for (int i = 0; i < 6; i++) {
        ck_assert_uint_eq(d->occupancy[i].live_bytes, live[i]);
        if (i)
            ck_assert_uint_ge(d->occupancy[i].time_ns, d->occupancy[i - 1].time_ns);
    }
    ck_assert_uint_eq(d->occupancy[5].live_actual, 64 + 1024);
    /* blocks: lifetimes, scopes, names, flags */
    const mf_block *b1 = block_at(m, CPU0, 0x1000, 0), *b4 = block_at(m, CPU0, 0x4000, 0);
    ck_assert_str_eq(mf_model_string(m, b1->scope), "net_dense0:");
    ck_assert_str_eq(mf_model_string(m, b1->name), "w");
    ck_assert_uint_gt(b1->free_ns, b4->alloc_ns);
    ck_assert_uint_eq(b4->free_ns, MF_LIVE_AT_END);
    ck_assert_str_eq(mf_model_string(m, block_at(m, CPU0, 0x2000, 0)->name), "unknown");
    ck_assert_uint_eq(b4->flags & MF_FLAG_EXPLICIT, MF_FLAG_EXPLICIT);
    ck_assert_uint_eq(b4->pid, (uint32_t)getpid());
    ck_assert_uint_eq(b4->tid, mf_recorder_thread_id());
    ck_assert_uint_eq(b4->end, MF_BLOCK_LIVE);        /* the process still runs */
    ck_assert_uint_eq(b1->end, MF_BLOCK_FREED);
    mf_model_free(m);
}
END_TEST

START_TEST(scope_statistics_and_at_peak)
{
    start_recording("scope_statistics_and_at_peak");
    record_cpu_story();
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->n_scopes, 2);
    const mf_scope_stat *net = scope_named(m, d, "net_dense0:");
    const mf_scope_stat *relu = scope_named(m, d, "relu:");
    ck_assert_uint_eq(net->alloc_count, 2);
    ck_assert_uint_eq(net->alloc_bytes, 400);
    ck_assert_uint_eq(net->free_count, 2);
    ck_assert_uint_eq(net->peak_live_bytes, 400);
    ck_assert_uint_eq(net->live_bytes_end, 0);
    ck_assert_uint_eq(net->min_size, 100);
    ck_assert_uint_eq(net->max_size, 300);
    ck_assert_uint_eq(relu->alloc_count, 2);
    ck_assert_uint_eq(relu->alloc_bytes, 1050);
    ck_assert_uint_eq(relu->live_bytes_end, 1050);
    ck_assert_uint_eq(relu->live_count_end, 2);
    /* at the peak (1150): net_dense0 still held 0x1000 (100), relu 1050 */
    ck_assert_uint_eq(net->at_peak_bytes, 100);
    ck_assert_uint_eq(net->at_peak_count, 1);
    ck_assert_uint_eq(relu->at_peak_bytes, 1050);
    ck_assert_uint_eq(relu->at_peak_count, 2);
    ck_assert_uint_eq(net->at_peak_bytes + relu->at_peak_bytes, d->peak_bytes);
    ck_assert_ptr_eq(mf_model_scope(d, relu->scope), relu);
    mf_model_free(m);
}
END_TEST

START_TEST(explicit_blocks_inside_segments_do_not_collide)
{
    start_recording("explicit_blocks_inside_segments");
    /* a CUPTI-like segment (not explicit) and an allocator's sub-block at
     * the same address */
    mf_recorder_alloc_with_stack(GPU0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, 0, 0x7000, 4096, 4096, 0,
                                 0, 0, 0);
    memflow_record_alloc("gpu/0", P(0x7000), 512, 512, "sub", 0);
    memflow_record_free("gpu/0", P(0x7000));          /* ends the sub-block only */
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *d = mf_model_device(m, GPU0);
    ck_assert_uint_eq(d->alloc_count, 2);
    ck_assert_uint_eq(d->replaced_blocks, 0);
    ck_assert_uint_eq(d->unknown_frees, 0);
    ck_assert_uint_eq(d->peak_bytes, 4096 + 512);
    ck_assert_uint_eq(d->live_bytes_end, 4096);
    ck_assert_uint_eq(block_at(m, GPU0, 0x7000, 0)->free_ns, MF_LIVE_AT_END);
    ck_assert_uint_ne(block_at(m, GPU0, 0x7000, 1)->free_ns, MF_LIVE_AT_END);
    mf_model_free(m);
}
END_TEST

/* The sub-block of view v at addr, or NULL. */
static const mf_block *subblock_at(const mf_model *m, uint16_t device, uint64_t addr)
{
    const mf_view *v = mf_model_view(m, device, (uint32_t)getpid());
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < v->n_subblocks; i++)
        if (v->subblocks[i].addr == addr)
            return &v->subblocks[i];
    return NULL;
}

/* The statistics of key in stats[0..n), or NULL. */
static const mf_scope_stat *keyed_at(const mf_scope_stat *stats, size_t n, uint32_t key)
{
    for (size_t i = 0; i < n; i++)
        if (stats[i].scope == key)
            return &stats[i];
    return NULL;
}

/* The statistics of the string text in stats[0..n) (keyed by string id), or NULL. */
static const mf_scope_stat *named_at(const mf_model *m, const mf_scope_stat *stats, size_t n,
                                     const char *text)
{
    for (size_t i = 0; i < n; i++)
        if (stats[i].scope && strcmp(mf_model_string(m, stats[i].scope), text) == 0)
            return &stats[i];
    return NULL;
}

/*
 * Tensors (GPU sub-blocks) inside a segment: a naming record at an address
 * where both the segment and its first tensor start names the tensor (the
 * more specific), not the segment; roles by rule (other, temporary)
 * apply to tensors; they are counted by role and name at the tensors' own
 * peak, with steps of their own; the segment's counts are untouched.
 */
START_TEST(tensor_names_inside_segments)
{
    const uint64_t seg = 0x7f0000000000ull;
    start_recording("tensor_names");
    mf_recorder_alloc_with_stack(GPU0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, 0, seg, 1 << 20, 1 << 20,
                                 0, 0, 0, 0);
    const uint16_t tensor = MF_FLAG_SUBBLOCK | MF_MEM_DEVICE << MF_MEMKIND_SHIFT;
    mf_recorder_alloc_with_stack(GPU0, tensor, 0, seg + 8192, 100, 512, 0, 0, 0, 0);   /* before */
    mf_recorder_alloc_with_stack(GPU0, tensor, 0, seg, 4096, 4096, 0, 0, 0, 0);
    uint32_t w = mf_recorder_intern("net:w", 5);
    mf_recorder_trace(MF_TRACE_BLOCK_NAME, 0, seg, 0, w, GPU0 | MF_ROLE_PARAMETER << 16);
    step_mark(1);
    mf_recorder_alloc_with_stack(GPU0, tensor, 0, seg + 4096, 1000, 1024, 0, 0, 0, 0);
    mf_recorder_free_event(GPU0, tensor, 0, seg + 4096);              /* a temporary */
    mf_recorder_alloc_with_stack(GPU0, tensor, 0, seg + 4096, 2000, 2048, 0, 0, 0, 0); /* peak 6196 */
    step_mark(2);                                                     /* held across: other */
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *g = mf_model_device(m, GPU0);
    ck_assert_ptr_nonnull(g);
    /* the segment: unnamed, its own counts and role */
    ck_assert_uint_eq(m->n_gpu_live, 1);
    ck_assert_uint_eq(m->gpu_live[0].name, 0);
    ck_assert_uint_eq(g->peak_bytes, 1 << 20);
    ck_assert_uint_eq(g->n_roles, 1);
    ck_assert_uint_eq(g->roles[0].scope, MF_ROLE_UNKNOWN);
    ck_assert_uint_eq(g->roles[0].at_peak_bytes, 1 << 20);
    ck_assert_ptr_null(named_at(m, g->names, g->n_names, "net:w"));
    /* the tensors, by role at their peak (6196: after the temporary) */
    ck_assert_uint_eq(g->sub.peak_bytes, 6196);
    const unsigned role[] = { MF_ROLE_UNKNOWN, MF_ROLE_PARAMETER, MF_ROLE_TEMPORARY,
                              MF_ROLE_OTHER };
    const uint64_t at_peak[] = { 100, 4096, 0, 2000 }, allocated[] = { 100, 4096, 1000, 2000 };
    ck_assert_uint_eq(g->n_sub_roles, 4);
    for (size_t i = 0; i < 4; i++) {
        const mf_scope_stat *r = keyed_at(g->sub_roles, g->n_sub_roles, role[i]);
        ck_assert_msg(r != NULL, "no tensor role %u", role[i]);
        ck_assert_uint_eq(r->at_peak_bytes, at_peak[i]);
        ck_assert_uint_eq(r->alloc_bytes, allocated[i]);
    }
    const mf_scope_stat *named = named_at(m, g->sub_names, g->n_sub_names, "net:w");
    ck_assert_ptr_nonnull(named);
    ck_assert_uint_eq(named->at_peak_bytes, 4096);
    ck_assert_uint_eq(keyed_at(g->sub_names, g->n_sub_names, 0)->at_peak_bytes, 2100);
    const mf_block *t = subblock_at(m, GPU0, seg);
    ck_assert_str_eq(mf_model_string(m, t->name), "net:w");
    ck_assert_uint_eq(t->role, MF_ROLE_PARAMETER | MF_ROLE_NAMED);
    /* the tensors' steps: held at each mark, the peak, what each allocated */
    ck_assert_uint_eq(g->n_sub_steps, 2);
    ck_assert_uint_eq(g->sub_steps[0].held_start, 4196);
    ck_assert_uint_eq(g->sub_steps[0].peak_bytes, 6196);
    ck_assert_uint_eq(g->sub_steps[0].alloc_bytes, 3000);
    ck_assert_uint_eq(g->sub_steps[0].alloc_count, 2);
    ck_assert_uint_eq(g->sub_steps[1].held_start, 6196);
    ck_assert_uint_eq(g->steps[0].held_start, 1 << 20);
    mf_model_free(m);
}
END_TEST

START_TEST(subblocks_counted_apart)
{
    const uint64_t arena = 0x100000, seg = 0x7f0000000000ull;
    start_recording("subblocks");
    mf_recorder_alloc_with_stack(CPU0, 0, 0, arena, 65536, 65536, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(GPU0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, 0, seg, 1 << 20, 1 << 20,
                                 0, 0, 0, 0);
    /* a heap at the start of the GPU segment: its regions belong to gpu/0 */
    mf_recorder_pool(CPU0, MF_POOL_HEAP_REGISTERED, 0, seg, 1 << 20, 0);
    memflow_scope_push("sub", 0);
    mf_recorder_alloc_with_stack(CPU0, MF_FLAG_SUBBLOCK, 0, arena, 1000, 1000, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(CPU0, MF_FLAG_SUBBLOCK, 0, arena + 1024, 2000, 2000, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(CPU0, MF_FLAG_SUBBLOCK, 0, seg + 4096, 300000, 300000, 0, 0, 0, 0);
    mf_recorder_free_event(CPU0, MF_FLAG_SUBBLOCK, 0, arena);   /* the region, not the arena */
    mf_recorder_trace(MF_TRACE_REGION_NAME, 0, arena + 1024, 0, mf_recorder_intern("named", 5),
                      CPU0);
    mf_recorder_pool(CPU0, MF_POOL_HEAP_UNREGISTERED, 0, seg, 0, 0);
    /* no heap holds it any more: it stays on cpu/0 */
    mf_recorder_alloc_with_stack(CPU0, MF_FLAG_SUBBLOCK, 0, seg + 8192, 10, 10, 0, 0, 0, 0);
    memflow_scope_pop();
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *c = mf_model_device(m, CPU0), *g = mf_model_device(m, GPU0);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_nonnull(g);
    /* the devices' own counts see the arena and the segment once */
    ck_assert_uint_eq(c->alloc_count, 1);
    ck_assert_uint_eq(c->free_count, 0);
    ck_assert_uint_eq(c->unknown_frees, 0);
    ck_assert_uint_eq(c->peak_bytes, 65536);
    ck_assert_uint_eq(c->live_bytes_end, 65536);
    ck_assert_uint_eq(c->n_scopes, 1);
    ck_assert_uint_eq(c->occupancy[c->n_occupancy - 1].live_bytes, 65536);
    ck_assert_uint_eq(g->alloc_count, 1);
    ck_assert_uint_eq(g->peak_bytes, 1 << 20);
    ck_assert_uint_eq(g->kinds[MF_MEM_DEVICE].alloc_count, 1);
    ck_assert_uint_eq(m->n_leaks, 2);
    ck_assert_uint_eq(m->n_gpu_live, 1);
    /* the sub-blocks, apart */
    ck_assert_uint_eq(c->sub.alloc_count, 3);
    ck_assert_uint_eq(c->sub.free_count, 1);
    ck_assert_uint_eq(c->sub.alloc_bytes, 3010);
    ck_assert_uint_eq(c->sub.peak_bytes, 3000);
    ck_assert_uint_eq(c->sub.live_bytes_end, 2010);
    ck_assert_uint_eq(c->sub.live_count_end, 2);
    ck_assert_uint_eq(c->n_sub_scopes, 1);
    ck_assert_str_eq(mf_model_string(m, c->sub_scopes[0].scope), "sub:");
    ck_assert_uint_eq(c->sub_scopes[0].alloc_count, 3);
    ck_assert_uint_eq(c->sub_scopes[0].free_count, 1);
    ck_assert_uint_eq(c->sub_scopes[0].peak_live_bytes, 3000);
    ck_assert_uint_eq(g->sub.alloc_count, 1);
    ck_assert_uint_eq(g->sub.alloc_bytes, 300000);
    ck_assert_uint_eq(g->sub.peak_bytes, 300000);
    ck_assert_uint_eq(g->sub.live_bytes_end, 300000);
    /* drawn over their lanes: ended and live, with their names */
    const mf_block *named = subblock_at(m, CPU0, arena + 1024);
    ck_assert_ptr_nonnull(named);
    ck_assert_str_eq(mf_model_string(m, named->name), "named");
    ck_assert_uint_eq(named->free_ns, MF_LIVE_AT_END);
    ck_assert_uint_eq(subblock_at(m, CPU0, arena)->end, MF_BLOCK_FREED);
    ck_assert_uint_eq(subblock_at(m, CPU0, seg + 8192)->requested, 10);
    ck_assert_uint_eq(subblock_at(m, GPU0, seg + 4096)->device, GPU0);
    ck_assert_uint_eq(subblock_at(m, GPU0, seg + 4096)->flags & MF_FLAG_SUBBLOCK,
                      MF_FLAG_SUBBLOCK);
    ck_assert_ptr_null(subblock_at(m, CPU0, seg + 4096));
    /* the heap's events are on its device */
    ck_assert_uint_eq(m->n_pools, 2);
    ck_assert_uint_eq(m->pools[0].device, GPU0);
    ck_assert_uint_eq(m->pools[1].device, GPU0);
    mf_model_free(m);
}
END_TEST

START_TEST(alloc_over_live_address_ends_old_block)
{
    start_recording("alloc_over_live_address");
    memflow_record_alloc("cpu/0", P(0x5000), 10, 16, NULL, 0);
    memflow_record_alloc("cpu/0", P(0x5000), 30, 32, NULL, 0);
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->alloc_count, 2);
    ck_assert_uint_eq(d->replaced_blocks, 1);
    ck_assert_uint_eq(d->free_count, 0);
    ck_assert_uint_eq(block_at(m, CPU0, 0x5000, 0)->free_ns, block_at(m, CPU0, 0x5000, 1)->alloc_ns);
    ck_assert_uint_eq(block_at(m, CPU0, 0x5000, 0)->end, MF_BLOCK_REPLACED);
    ck_assert_uint_eq(d->live_bytes_end, 30);
    ck_assert_uint_eq(d->live_count_end, 1);
    ck_assert_uint_eq(d->peak_bytes, 30);
    ck_assert_uint_ge(m->n_warnings, 1);
    mf_model_free(m);
}
END_TEST

START_TEST(snapshots_carry_live_bytes_of_the_events)
{
    start_recording("snapshots");
    uint64_t values[MF_SAMPLE_VALUES] = { 1000, 2000, 3000, 4000, 5000, 0 };
    memflow_record_alloc("cpu/0", P(0x1000), 700, 704, NULL, 0);
    mf_recorder_sample(CPU0, mf_clock_now(), values);
    memflow_record_alloc("cpu/0", P(0x2000), 300, 304, NULL, 0);
    values[MF_SAMPLE_GPU_USED] = 123456;
    mf_recorder_sample(GPU1, mf_clock_now(), values);
    mf_model *m = finish_and_load(UINT64_MAX);
    const mf_device_model *d = mf_model_device(m, CPU0), *g = mf_model_device(m, GPU1);
    ck_assert_uint_eq(d->n_snapshots, 1);
    ck_assert_uint_eq(d->snapshots[0].events_live, 700);
    ck_assert_uint_eq(d->snapshots[0].value[MF_SAMPLE_RESIDENT], 3000);
    ck_assert_ptr_nonnull(g);
    ck_assert_uint_eq(g->n_snapshots, 1);
    ck_assert_uint_eq(g->snapshots[0].events_live, 0);
    ck_assert_uint_eq(g->snapshots[0].value[MF_SAMPLE_GPU_USED], 123456);
    /* devices sorted: cpu/0 before gpu/1 */
    ck_assert_uint_eq(m->devices[0].device, CPU0);
    ck_assert_uint_eq(m->devices[1].device, GPU1);
    mf_model_free(m);
}
END_TEST

START_TEST(scope_spans_per_thread)
{
    start_recording("spans");
    memflow_scope_push("net", 0);
    memflow_scope_push("dense0", 1);                    /* "net:dense0:" */
    memflow_record_alloc("cpu/0", P(0x10), 8, 8, NULL, 0);
    memflow_scope_pop();
    memflow_scope_pop();
    memflow_scope_push("tail", 0);                      /* never popped */
    memflow_record_alloc("cpu/0", P(0x20), 8, 8, NULL, 0);
    mf_model *m = finish_and_load(UINT64_MAX);
    ck_assert_uint_eq(m->n_spans, 3);
    ck_assert_str_eq(mf_model_string(m, m->spans[0].scope), "net:");
    ck_assert_str_eq(mf_model_string(m, m->spans[1].scope), "net:dense0:");
    ck_assert_str_eq(mf_model_string(m, m->spans[2].scope), "tail:");
    ck_assert_uint_eq(m->spans[0].depth, 1);
    ck_assert_uint_eq(m->spans[1].depth, 2);
    ck_assert_uint_le(m->spans[0].begin_ns, m->spans[1].begin_ns);
    ck_assert_uint_le(m->spans[1].end_ns, m->spans[0].end_ns);
    ck_assert_uint_le(m->spans[0].end_ns, m->spans[2].begin_ns);
    ck_assert_uint_eq(m->spans[2].end_ns, m->t1_ns);
    ck_assert_uint_eq(m->spans[2].tid, mf_recorder_thread_id());
    ck_assert_str_eq(mf_model_string(m, block_at(m, CPU0, 0x10, 0)->scope), "net:dense0:");
    /* the thread is named from /proc */
    ck_assert_uint_ge(m->n_threads, 1);
    ck_assert_uint_eq(m->processes[0].pid, (uint32_t)getpid());
    ck_assert_int_eq(m->processes[0].finished, 1);
    mf_model_free(m);
}
END_TEST

START_TEST(until_cuts_the_log)
{
    start_recording("until");
    memflow_record_alloc("cpu/0", P(0x1000), 100, 100, NULL, 0);
    memflow_record_alloc("cpu/0", P(0x2000), 200, 200, NULL, 0);
    usleep(20000);
    memflow_record_free("cpu/0", P(0x1000));
    memflow_record_alloc("cpu/0", P(0x3000), 5000, 5000, NULL, 0);
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_recorder_finish();
    mf_log *log;
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), 0);
    uint64_t cut = 0;
    for (size_t i = 0; i < log->n_events; i++)
        if (log->events[i].type == MF_REC_ALLOC && log->events[i].alloc.addr == 0x2000)
            cut = log->events[i].time_ns;
    mf_model *m = mf_model_build(&log, 1, cut + 1000000, err, sizeof err);
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->alloc_count, 2);
    ck_assert_uint_eq(d->live_bytes_end, 300);
    ck_assert_uint_eq(d->peak_bytes, 300);
    ck_assert_uint_eq(block_at(m, CPU0, 0x1000, 0)->free_ns, MF_LIVE_AT_END);
    mf_model_free(m);
    mf_log_free(log);
}
END_TEST

START_TEST(two_processes_merge)
{
    start_recording("two_processes");
    memflow_scope_push("parent", 0);
    memflow_record_alloc("cpu/0", P(0x1000), 100, 100, NULL, 0);
    pid_t child = fork();
    if (child == 0) {
        memflow_scope_push("child", 0);
        memflow_record_alloc("cpu/0", P(0x1000), 40, 40, NULL, 0); /* same address */
        memflow_record_free("cpu/0", P(0x1000));
        mf_recorder_finish();
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    char parent_log[4096], child_log[2048], err[512];
    snprintf(parent_log, sizeof parent_log, "%s", mf_recorder_log_path());
    snprintf(child_log, sizeof child_log, "%s/memflow-%d.mfl", scratch, (int)child);
    mf_recorder_finish();
    const char *paths[] = { parent_log, child_log };
    mf_model *m = mf_model_load(paths, 2, UINT64_MAX, err, sizeof err);
    ck_assert_msg(m != NULL, "%s", err);
    ck_assert_uint_eq(m->n_processes, 2);
    ck_assert_uint_eq(m->processes[1].pid, (uint32_t)child);
    ck_assert_uint_eq(m->processes[1].ppid, (uint32_t)getpid());
    const mf_device_model *d = mf_model_device(m, CPU0);
    ck_assert_uint_eq(d->alloc_count, 2);
    ck_assert_uint_eq(d->replaced_blocks, 0);
    ck_assert_uint_eq(d->unknown_frees, 0);
    ck_assert_uint_eq(d->live_bytes_end, 100);
    ck_assert_uint_eq(d->peak_bytes, 140);
    ck_assert_uint_eq(d->n_views, 2);
    const mf_block *theirs = block_of(m, CPU0, (uint32_t)child, 0x1000, 0);
    ck_assert_uint_eq(theirs->pid, (uint32_t)child);
    ck_assert_str_eq(mf_model_string(m, theirs->scope), "child:");
    ck_assert_str_eq(mf_model_string(m, block_at(m, CPU0, 0x1000, 0)->scope), "parent:");
    mf_model_free(m);
}
END_TEST

/* The CSV of the GPU blocks, compared byte for byte with a file. */
START_TEST(gpu_csv_matches_expected_file)
{
    start_recording("gpu_csv");
    memflow_scope_push("hybridsequential", 0);
    memflow_scope_push("dense0", 1);
    memflow_record_alloc("gpu/0", P(0x7f0000001000), 5120, 8192, "in_arg:weight", 0);
    memflow_record_alloc("gpu/0", P(0x7f0000003000), 40, 512, "in_arg:bias", MEMFLOW_ALLOC_REUSED);
    memflow_record_alloc("gpu/0", P(0x7f0000005000), 64, 512, "tmp", 0);
    memflow_record_free("gpu/0", P(0x7f0000005000));    /* freed: not in the CSV */
    memflow_scope_pop();
    memflow_scope_pop();
    memflow_record_alloc("gpu/1", P(0x7f0000009000), 1000, 1024, NULL, 0); /* untagged */
    memflow_scope_push("q\"uote", 0);
    memflow_record_alloc("gpu/0", P(0x7f000000b000), 1, 512, "x", 0);
    memflow_scope_pop();
    memflow_record_alloc("cpu/0", P(0x1000), 77, 80, NULL, 0);   /* CPU: not in the CSV */
    mf_model *m = finish_and_load(UINT64_MAX);
    char want[2048];
    mf_sink sink = { 0 };
    ck_assert_int_eq(mf_csv_write_sink(m, (uint32_t)getpid(), &sink), 0);
    char *got = mf_sink_take(&sink);
    char path[8192];
    const char *src = getenv("top_srcdir");
    snprintf(path, sizeof path, "%s/tests/render_gpu_expected.csv", src ? src : "..");
    FILE *e = fopen(path, "r");
    ck_assert_msg(e != NULL, "cannot open %s", path);
    size_t n = fread(want, 1, sizeof want - 1, e);
    fclose(e);
    want[n] = 0;
    ck_assert_str_eq(got, want);
    free(got);
    /* one file per process, named MXNet's way */
    char err[512];
    int written;
    ck_assert_int_eq(mf_csv_write_all(m, scratch, "gpu_memory_profile", &written, err,
                                      sizeof err), 0);
    ck_assert_int_eq(written, 1);
    snprintf(path, sizeof path, "%s/gpu_memory_profile-pid_%d.csv", scratch, (int)getpid());
    ck_assert_int_eq(access(path, R_OK), 0);
    mf_model_free(m);
}
END_TEST

START_TEST(dump_writes_outputs_and_dumps_returns_stats)
{
    start_recording("dump");
    memflow_scope_push("layer", 0);
    memflow_record_alloc("gpu/0", P(0x7000), 5120, 8192, "weight", 0);
    memflow_record_alloc("cpu/0", P(0x1000), 64, 64, NULL, 0);
    memflow_scope_pop();
    const char *text = memflow_dumps(1, "table", "count", 1);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "Max Use  (kB)"));
    ck_assert_ptr_nonnull(strstr(text, "layer:"));
    /* after the reset, only what follows counts */
    memflow_record_alloc("cpu/0", P(0x2000), 10, 16, NULL, 0);
    text = memflow_dumps(0, "json", NULL, 0);
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_nonnull(strstr(text, "\"alloc_count\":1,"));
    ck_assert_ptr_null(strstr(text, "layer:"));
    ck_assert_ptr_null(memflow_dumps(0, "xml", NULL, 0));
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "table, json"));
    ck_assert_ptr_null(memflow_dumps(0, NULL, "median", 0));
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "sort_by 'median'"));
    ck_assert_int_eq(memflow_dump(1), 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/stats.json", scratch);
    ck_assert_int_eq(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/profile.json", scratch);
    ck_assert_int_eq(access(path, R_OK), 0);
    snprintf(path, sizeof path, "%s/gpu_memory_profile-pid_%d.csv", scratch, (int)getpid());
    ck_assert_int_eq(access(path, R_OK), 0); /* GPU blocks: the CSV is always written */
}
END_TEST

/* continuous_dump: the outputs appear, and follow the run, without any
 * memflow_dump() call from the program. */
START_TEST(continuous_dump_refreshes_outputs)
{
    const char *keys[] = { "continuous_dump", "dump_period" };
    const char *vals[] = { "1", "0.05" };
    ck_assert_int_eq(memflow_set_config(2, keys, vals), 0);
    start_recording("continuous");
    memflow_record_alloc("cpu/0", P(0x1000), 1234, 1280, NULL, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/stats.json", scratch);
    int waited = 0;
    while (access(path, R_OK) != 0 && waited++ < 200)
        usleep(10000);
    ck_assert_int_eq(access(path, R_OK), 0);
    memflow_record_alloc("cpu/0", P(0x2000), 4321, 4352, NULL, 0);
    /* a later dump shows the second block too */
    char *text = NULL;
    for (waited = 0; waited < 200; waited++) {
        usleep(10000);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        char buf[65536];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        if (strstr(buf, "\"alloc_bytes\": 5555") || strstr(buf, "\"alloc_bytes\":5555")) {
            text = strdup(buf);
            break;
        }
    }
    ck_assert_msg(text != NULL, "stats.json never showed both blocks (5555 bytes)");
    free(text);
}
END_TEST

static void expect_before(const char *a, const char *b)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert(a < b);
}

START_TEST(stats_json_sorted_as_asked)
{
    start_recording("stats_sorted");
    memflow_scope_push("a", 0);
    memflow_record_alloc("cpu/0", P(0x1000), 1000, 1000, NULL, 0);
    memflow_scope_pop();
    memflow_scope_push("b", 0);
    for (int i = 0; i < 3; i++)
        memflow_record_alloc("cpu/0", P(0x2000 + 0x100 * i), 10, 16, NULL, 0);
    memflow_scope_pop();
    mf_model *m = finish_and_load(UINT64_MAX);
    mf_stats_options opt = { .json = 1, .sort_by = MF_SORT_COUNT };
    char *s = mf_stats_string(m, &opt);
    expect_before(strstr(s, "\"scope\":\"b:\""), strstr(s, "\"scope\":\"a:\""));
    free(s);
    opt.sort_by = MF_SORT_TOTAL;
    s = mf_stats_string(m, &opt);
    expect_before(strstr(s, "\"scope\":\"a:\""), strstr(s, "\"scope\":\"b:\""));
    free(s);
    opt.ascending = 1;
    s = mf_stats_string(m, &opt);
    expect_before(strstr(s, "\"scope\":\"b:\""), strstr(s, "\"scope\":\"a:\""));
    free(s);
    mf_model_free(m);
}
END_TEST

START_TEST(table_groups_small_peak_holders)
{
    start_recording("peak_holders");
    for (int i = 1; i <= 25; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%02d", i);
        memflow_scope_push(name, 0);
        memflow_record_alloc("cpu/0", P(0x1000 * i), 10 * (size_t)i, 16 * (size_t)i, NULL, 0);
        memflow_scope_pop();
    }
    mf_model *m = finish_and_load(UINT64_MAX);
    char *text = mf_stats_string(m, NULL);
    ck_assert_ptr_nonnull(strstr(text, "cpu/0: peak 3250 bytes"));
    ck_assert_ptr_nonnull(strstr(text, "  250 bytes   7.69%        1 blocks  s25:\n"));
    ck_assert_ptr_nonnull(strstr(text, "  150 bytes   4.62%        5 blocks  (5 other scopes)\n"));
    ck_assert_ptr_null(strstr(text, "blocks  s05:"));
    free(text);
    mf_model_free(m);
}
END_TEST

START_TEST(dump_without_a_log_says_so)
{
    ck_assert_int_eq(memflow_dump(0), -1);
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "memflow_dump: no log is open"));
    ck_assert_ptr_null(memflow_dumps(0, "table", "total", 0));
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "memflow_dumps: no log is open"));
}
END_TEST

START_TEST(dump_while_running_keeps_recording)
{
    start_recording("dump_running");
    memflow_record_alloc("gpu/0", P(0x7000), 100, 128, "a", 0);
    ck_assert_int_eq(memflow_dump(0), 0);            /* not finished: goes on */
    memflow_record_alloc("gpu/0", P(0x9000), 200, 256, "b", 0);
    ck_assert_int_eq(memflow_dump(0), 0);
    char path[2048];
    snprintf(path, sizeof path, "%s/gpu_memory_profile-pid_%d.csv", scratch, (int)getpid());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    ck_assert_str_eq(text, MF_CSV_HEADER "\"<unk>:a\",\"100\",\"0\",\"128\",\"0\"\n"
                           "\"<unk>:b\",\"200\",\"0\",\"256\",\"0\"\n");
    mf_model *m = finish_and_load(UINT64_MAX);
    ck_assert_uint_eq(mf_model_device(m, GPU0)->alloc_count, 2);
    mf_model_free(m);
}
END_TEST

/* A model settled before a view's first allocation (memflow serve answers
 * at any time) still takes that allocation's address as the view's lowest. */
START_TEST(settle_before_first_alloc_keeps_addresses)
{
    char err[256];
    mf_model *m = mf_model_new(NULL, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    mf_log_info info = { .path = "x.mfl", .program = "x", .parent = -1, .prev_image = -1,
                         .next_image = -1 };
    info.header.pid = 42;
    ck_assert_int_eq(mf_model_set_process(m, 0, &info), 0);
    mf_event free_first = { .type = MF_REC_FREE, .time_ns = 1000, .device = CPU0,
                            .free.addr = 0x5000 };
    ck_assert_int_eq(mf_model_feed(m, &free_first, 1, NULL), 0);
    ck_assert_int_eq(mf_model_settle(m), 0);
    const mf_view *v = mf_model_view(m, CPU0, 42);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(v->unknown_frees, 1);
    ck_assert_uint_eq(v->min_addr, 0);
    mf_event alloc = { .type = MF_REC_ALLOC, .time_ns = 2000, .device = CPU0,
                       .alloc = { .addr = 0x9000, .requested = 100, .actual = 112 } };
    ck_assert_int_eq(mf_model_feed(m, &alloc, 1, NULL), 0);
    ck_assert_int_eq(mf_model_settle(m), 0);
    v = mf_model_view(m, CPU0, 42);
    ck_assert_uint_eq(v->alloc_count, 1);
    ck_assert_uint_eq(v->min_addr, 0x9000);
    ck_assert_uint_eq(v->max_addr, 0x9000 + 112);
    ck_assert_uint_eq(mf_model_device(m, CPU0)->min_addr, 0x9000);
    mf_model_free(m);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, cpu_blocks_peak_and_end);
    tcase_add_test(tc, roles_at_peak);
    tcase_add_test(tc, step_window_counts_inside);
    tcase_add_test(tc, scope_statistics_and_at_peak);
    tcase_add_test(tc, explicit_blocks_inside_segments_do_not_collide);
    tcase_add_test(tc, subblocks_counted_apart);
    tcase_add_test(tc, tensor_names_inside_segments);
    tcase_add_test(tc, alloc_over_live_address_ends_old_block);
    tcase_add_test(tc, snapshots_carry_live_bytes_of_the_events);
    tcase_add_test(tc, scope_spans_per_thread);
    tcase_add_test(tc, until_cuts_the_log);
    tcase_add_test(tc, two_processes_merge);
    tcase_add_test(tc, gpu_csv_matches_expected_file);
    tcase_add_test(tc, dump_writes_outputs_and_dumps_returns_stats);
    tcase_add_test(tc, stats_json_sorted_as_asked);
    tcase_add_test(tc, table_groups_small_peak_holders);
    tcase_add_test(tc, dump_without_a_log_says_so);
    tcase_add_test(tc, dump_while_running_keeps_recording);
    tcase_add_test(tc, continuous_dump_refreshes_outputs);
    tcase_add_test(tc, settle_before_first_alloc_keeps_addresses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
