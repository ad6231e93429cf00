/*
 * logcheck.c - an independent reading of a log for the capture tests.
 *
 * Prints one line per scope, "SCOPE allocs=N frees=N bytes=N actual=N",
 * counting a free against the scope of the allocation it ends (matched by
 * address, replayed in time order), then "total allocs=N frees=N
 * unknown_frees=N", "peak bytes=N" (the most requested bytes held at once)
 * and the log's damage line, if any.  Sub-blocks (MF_FLAG_SUBBLOCK: regions
 * inside other blocks) are counted apart, in neither of those lines: when
 * the log has any, "subblocks allocs=N frees=N bytes=N peak=N live=N
 * live_count=N".  It uses only the core reader, so it checks the capture
 * without the render code.
 * Usage: logcheck LOG   (exit 1 if the log cannot be read, 3 if damaged)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_in_memory.h"

typedef struct live { uint64_t addr, size; uint32_t scope; uint32_t used; } live;
typedef struct counts { uint64_t allocs, frees, bytes, actual; } counts;

static live *table;
static size_t table_size;

static live *slot_of(uint64_t addr)
{
    size_t i = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull) & (table_size - 1);
    while (table[i].used && table[i].addr != addr)
        i = (i + 1) & (table_size - 1);
    return &table[i];
}

/* Remove a slot without breaking the probe chains after it. */
static void slot_remove(live *s)
{
    size_t i = (size_t)(s - table);
    table[i].used = 0;
    for (size_t j = (i + 1) & (table_size - 1); table[j].used; j = (j + 1) & (table_size - 1)) {
        live moved = table[j];
        table[j].used = 0;
        *slot_of(moved.addr) = moved;
    }
}

/* Sub-blocks, apart: few, so a plain array of the live ones. */
#define MAX_SUBBLOCKS 1024
static struct {
    uint64_t allocs, frees, bytes, held, peak;
    uint64_t addr[MAX_SUBBLOCKS], size[MAX_SUBBLOCKS];
    unsigned n_live;
} sub;

/* The address and flags of an ALLOC or FREE. */
static uint64_t addr_of(const mf_event *e)
{
    return e->type == MF_REC_ALLOC ? e->alloc.addr : e->free.addr;
}

static unsigned flags_of(const mf_event *e)
{
    return e->type == MF_REC_ALLOC ? e->alloc.flags : e->free.flags;
}

static void count_subblock(const mf_event *e)
{
    unsigned i = 0;
    while (i < sub.n_live && sub.addr[i] != addr_of(e))
        i++;
    if (i < sub.n_live) {         /* a free, or an allocation over a live one: it ends */
        sub.held -= sub.size[i];
        sub.frees += e->type == MF_REC_FREE;
        sub.n_live--;
        sub.addr[i] = sub.addr[sub.n_live];
        sub.size[i] = sub.size[sub.n_live];
    }
    if (e->type != MF_REC_ALLOC || sub.n_live == MAX_SUBBLOCKS)
        return;
    sub.addr[sub.n_live] = e->alloc.addr;
    sub.size[sub.n_live++] = e->alloc.requested;
    sub.allocs++;
    sub.bytes += e->alloc.requested;
    sub.held += e->alloc.requested;
    sub.peak = sub.held > sub.peak ? sub.held : sub.peak;
}

int main(int argc, char **argv)
{
    mf_log *log;
    char err[512];
    if (argc != 2) {
        fprintf(stderr, "usage: logcheck LOG\n");
        return 2;
    }
    int rc = mf_log_read(argv[1], &log, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    table_size = 1;
    while (table_size < log->n_events * 2 + 16)
        table_size *= 2;
    table = calloc(table_size, sizeof *table);
    counts *per_scope = calloc(log->n_strings + 2, sizeof *per_scope);
    uint64_t allocs = 0, frees = 0, unknown = 0, held = 0, peak = 0;
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if ((e->type == MF_REC_ALLOC || e->type == MF_REC_FREE) &&
            (flags_of(e) & MF_FLAG_SUBBLOCK)) {
            count_subblock(e);
        } else if (e->type == MF_REC_ALLOC) {
            const mf_ev_alloc *a = &e->alloc;
            live *s = slot_of(a->addr);
            held -= s->used ? s->size : 0;
            *s = (live){ a->addr, a->requested, a->scope < log->n_strings ? a->scope : 0, 1 };
            per_scope[s->scope].allocs++;
            per_scope[s->scope].bytes += a->requested;
            per_scope[s->scope].actual += a->actual;
            allocs++;
            held += a->requested;
            peak = held > peak ? held : peak;
        } else if (e->type == MF_REC_FREE) {
            live *s = slot_of(e->free.addr);
            frees++;
            if (!s->used) {
                unknown++;
                continue;
            }
            per_scope[s->scope].frees++;
            held -= s->size;
            slot_remove(s);
        }
    }
    for (uint32_t id = 0; id < log->n_strings; id++)
        if (per_scope[id].allocs || per_scope[id].frees)
            printf("%s allocs=%llu frees=%llu bytes=%llu actual=%llu\n", mf_log_string(log, id),
                   (unsigned long long)per_scope[id].allocs,
                   (unsigned long long)per_scope[id].frees,
                   (unsigned long long)per_scope[id].bytes,
                   (unsigned long long)per_scope[id].actual);
    printf("total allocs=%llu frees=%llu unknown_frees=%llu\n", (unsigned long long)allocs,
           (unsigned long long)frees, (unsigned long long)unknown);
    printf("peak bytes=%llu\n", (unsigned long long)peak);
    if (sub.allocs || sub.frees)
        printf("subblocks allocs=%llu frees=%llu bytes=%llu peak=%llu live=%llu live_count=%u\n",
               (unsigned long long)sub.allocs, (unsigned long long)sub.frees,
               (unsigned long long)sub.bytes, (unsigned long long)sub.peak,
               (unsigned long long)sub.held, sub.n_live);
    printf("pid=%llu ppid=%llu finished=%u\n", (unsigned long long)log->header.pid,
           (unsigned long long)log->header.ppid, log->header.flags & MF_HEADER_FINISHED);
    if (log->damaged)
        printf("damage: %s\n", log->damage);
    mf_log_free(log);
    free(table);
    free(per_scope);
    return rc == 1 ? 3 : 0;
}
