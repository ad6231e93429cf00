/*
 * floor.c - what the least exact analysis of memflow logs costs on this
 * machine: the CPU time per event of
 *
 *   read  - every event handed out in time order by memflow's reader (the
 *           code every memflow command reads logs with: the scan of the
 *           chunks, their decoding and the merge of the threads' chunks);
 *   pair  - the same, and each free paired with its allocation in an
 *           open-addressing table keyed by (log, device, address), keeping
 *           the bytes held and their peak: what any exact account of
 *           lifetimes, peaks and leaks has to do per event, and no more.
 *
 * bench/floor.sh sets these, and what `memflow compact` costs per event,
 * against the CPU a goal of docs/PERFORMANCE.md leaves per event.  Each
 * figure is the median of RUNS passes (3; -r RUNS), each with a fresh
 * reader.
 *
 * Usage: floor [-r RUNS] LOG...
 * Prints one line: "events N read_ns R pair_ns P peak_bytes B".
 * Exit status 1 when a log cannot be read, 2 on bad usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "event.h"
#include "reader.h"
#include "string_pool.h"

#define BATCH 4096

/* A live block of the pairing table: its key and its bytes; key 0: empty. */
typedef struct live {
    uint64_t key, addr, bytes;
} live;

typedef struct table {
    live *slots;
    size_t n_slots, used;
    uint64_t held, peak;
} table;

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t key_of(const mf_event *e)
{
    return ((uint64_t)e->log << 16 | e->device) + 1;
}

static size_t home(const table *t, uint64_t key, uint64_t addr)
{
    uint64_t x = (addr ^ key * 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
    return (size_t)(x ^ x >> 31) & (t->n_slots - 1);
}

static int grow(table *t)
{
    table bigger = { calloc(t->n_slots * 2, sizeof *t->slots), t->n_slots * 2, t->used,
                     t->held, t->peak };
    if (!bigger.slots)
        return -1;
    for (size_t i = 0; i < t->n_slots; i++) {
        if (!t->slots[i].key)
            continue;
        size_t k = home(&bigger, t->slots[i].key, t->slots[i].addr);
        while (bigger.slots[k].key)
            k = (k + 1) & (bigger.n_slots - 1);
        bigger.slots[k] = t->slots[i];
    }
    free(t->slots);
    *t = bigger;
    return 0;
}

/* An allocation: its block is live (one over a live address replaces it). */
static int on_alloc(table *t, uint64_t key, uint64_t addr, uint64_t bytes)
{
    if ((t->used + 1) * 2 > t->n_slots && grow(t) < 0)
        return -1;
    size_t k = home(t, key, addr);
    while (t->slots[k].key && (t->slots[k].key != key || t->slots[k].addr != addr))
        k = (k + 1) & (t->n_slots - 1);
    if (t->slots[k].key)
        t->held -= t->slots[k].bytes;
    else
        t->used++;
    t->slots[k] = (live){ key, addr, bytes };
    t->held += bytes;
    t->peak = t->held > t->peak ? t->held : t->peak;
    return 0;
}

/* A free: its block leaves the table (backward-shift deletion). */
static void on_free(table *t, uint64_t key, uint64_t addr)
{
    size_t mask = t->n_slots - 1, k = home(t, key, addr);
    while (t->slots[k].key && (t->slots[k].key != key || t->slots[k].addr != addr))
        k = (k + 1) & mask;
    if (!t->slots[k].key)
        return;
    t->held -= t->slots[k].bytes;
    t->used--;
    for (size_t i = (k + 1) & mask; t->slots[i].key; i = (i + 1) & mask) {
        size_t h = home(t, t->slots[i].key, t->slots[i].addr);
        if (k <= i ? (h <= k || h > i) : (h <= k && h > i)) {
            t->slots[k] = t->slots[i];
            k = i;
        }
    }
    t->slots[k].key = 0;
}

/* One pass over the logs (pairing with pair): its events, and its CPU
 * time into *ns.  -1 with a message when a log cannot be read. */
static long long pass(const char *const *paths, size_t n, int pair, uint64_t *ns,
                      uint64_t *peak)
{
    static mf_event batch[BATCH];
    static mf_sample_values samples[BATCH];
    char err[1024];
    table t = { calloc(1024, sizeof(live)), 1024, 0, 0, 0 };
    mf_strings *pool = mf_strings_new();
    mf_reader *r = NULL;
    mf_reader_options opt = { 0 };
    long long events = 0;
    long got = 0;
    uint64_t start = cpu_ns();
    if (!t.slots || !pool || mf_reader_open(&r, paths, n, pool, &opt, err, sizeof err) != 0) {
        fprintf(stderr, "floor: %s\n", t.slots && pool ? err : "out of memory");
        events = -1;
        goto out;
    }
    while ((got = mf_reader_next(r, batch, samples, BATCH, UINT64_MAX, err, sizeof err)) > 0) {
        events += got;
        for (long i = 0; pair && i < got; i++) {
            const mf_event *e = &batch[i];
            if (e->type == MF_REC_ALLOC && on_alloc(&t, key_of(e), e->alloc.addr,
                                                    e->alloc.requested) < 0) {
                got = -1;
                snprintf(err, sizeof err, "out of memory");
                break;
            }
            if (e->type == MF_REC_FREE)
                on_free(&t, key_of(e), e->free.addr);
        }
        if (got < 0)
            break;
    }
    if (got < 0) {
        fprintf(stderr, "floor: %s\n", err);
        events = -1;
    }
out:
    *ns = cpu_ns() - start;
    *peak = t.peak;
    mf_reader_close(r);
    mf_strings_free(pool);
    free(t.slots);
    return events;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int runs = 3, first = 1;
    if (argc > 2 && strcmp(argv[1], "-r") == 0) {
        runs = atoi(argv[2]);
        first = 3;
    }
    if (first >= argc || runs < 1 || runs > 99) {
        fprintf(stderr, "usage: floor [-r RUNS] LOG...\n");
        return 2;
    }
    const char *const *paths = (const char *const *)argv + first;
    size_t n = (size_t)(argc - first);
    uint64_t read_ns[99], pair_ns[99], peak = 0;
    long long events = 0;
    for (int k = 0; k < runs; k++) {
        if ((events = pass(paths, n, 0, &read_ns[k], &peak)) < 0 ||
            pass(paths, n, 1, &pair_ns[k], &peak) < 0)
            return 1;
    }
    qsort(read_ns, (size_t)runs, sizeof *read_ns, by_value);
    qsort(pair_ns, (size_t)runs, sizeof *pair_ns, by_value);
    double per = events ? (double)events : 1;
    printf("events %lld read_ns %.1f pair_ns %.1f peak_bytes %llu\n", events,
           (double)read_ns[runs / 2] / per, (double)pair_ns[runs / 2] / per,
           (unsigned long long)peak);
    return 0;
}
