/*
 * model.c - turn one or more logs into the model every output reads.
 *
 * Data flow: log_reader (core) gives each log's events sorted by time; here
 * the logs are merged in time order and replayed once:
 *   ALLOC/FREE  -> blocks (one allocation's life), occupancy points, peak,
 *                  per-scope statistics; live blocks sit in a hash table
 *                  keyed by (log, device, explicit-or-not, address), so a
 *                  custom allocator's sub-blocks never collide with the
 *                  CUPTI segments they live in;
 *   SAMPLE      -> snapshots (allocator/driver view next to the events');
 *   SCOPE       -> spans per thread;  ACTIVITY -> GPU activities;
 *   POOL        -> pool events;       NOTE, damage -> warnings.
 * Strings of all logs are re-interned into one model table.  Everything is
 * O(events) with hash tables: well under a second per million events.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model.h"

/* ---- small helpers ----------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint64_t hash_text(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return mix64(h);
}

/* ---- the model's string table ------------------------------------------ */

typedef struct string_table {
    uint32_t *slots;    /* model ids, 0 = empty (id 0 is never hashed) */
    size_t n_slots;     /* power of two */
    size_t cap_strings;
} string_table;

static int strings_rehash(mf_model *m, string_table *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 1; id < m->n_strings; id++) {
        size_t i = hash_text(m->strings[id]) & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = id;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

#define INTERN_FAILED UINT32_MAX

/* The model id of text, adding it if new; INTERN_FAILED if out of memory.
 * "unknown" is id 0 and never hashed. */
static uint32_t intern(mf_model *m, string_table *t, const char *text)
{
    if (strcmp(text, "unknown") == 0)
        return 0;
    if ((m->n_strings + 1) * 2 > t->n_slots &&
        strings_rehash(m, t, t->n_slots ? t->n_slots * 2 : 256) < 0)
        return INTERN_FAILED;
    size_t i = hash_text(text) & (t->n_slots - 1);
    for (; t->slots[i]; i = (i + 1) & (t->n_slots - 1))
        if (strcmp(m->strings[t->slots[i]], text) == 0)
            return t->slots[i];
    if (mf_grow((void **)&m->strings, &t->cap_strings, m->n_strings + 1, sizeof(char *)) < 0)
        return INTERN_FAILED;
    char *copy = strdup(text);
    if (!copy)
        return INTERN_FAILED;
    uint32_t id = m->n_strings++;
    m->strings[id] = copy;
    t->slots[i] = id;
    return id;
}

/* ---- live blocks: (tag, address) -> block index ------------------------ */

typedef struct live_entry {
    uint64_t addr;
    uint64_t tag;       /* 0 = empty slot; see live_tag() */
    uint64_t block;     /* index into the device's blocks */
} live_entry;

typedef struct live_table {
    live_entry *slots;
    size_t n_slots, used;
} live_table;

/* Log, device and explicit flag in one word; bit 63 keeps it nonzero. */
static uint64_t live_tag(uint16_t log, uint16_t device, unsigned flags)
{
    return 1ull << 63 | (uint64_t)log << 17 | (uint64_t)device << 1 |
           ((flags & MF_FLAG_EXPLICIT) ? 1u : 0u);
}

static size_t live_home(const live_table *t, uint64_t addr, uint64_t tag)
{
    return mix64(addr ^ (tag * 0x9e3779b97f4a7c15ull)) & (t->n_slots - 1);
}

static live_entry *live_find(const live_table *t, uint64_t addr, uint64_t tag)
{
    if (!t->n_slots)
        return NULL;
    for (size_t i = live_home(t, addr, tag);; i = (i + 1) & (t->n_slots - 1)) {
        live_entry *e = &t->slots[i];
        if (!e->tag)
            return NULL;
        if (e->addr == addr && e->tag == tag)
            return e;
    }
}

static int live_insert(live_table *t, uint64_t addr, uint64_t tag, uint64_t block);

static int live_resize(live_table *t, size_t n_slots)
{
    live_table bigger = { calloc(n_slots, sizeof(live_entry)), n_slots, 0 };
    if (!bigger.slots)
        return -1;
    for (size_t i = 0; i < t->n_slots; i++)
        if (t->slots[i].tag)
            live_insert(&bigger, t->slots[i].addr, t->slots[i].tag, t->slots[i].block);
    free(t->slots);
    *t = bigger;
    return 0;
}

/* Insert a key known to be absent. */
static int live_insert(live_table *t, uint64_t addr, uint64_t tag, uint64_t block)
{
    if ((t->used + 1) * 2 > t->n_slots && live_resize(t, t->n_slots ? t->n_slots * 2 : 1024) < 0)
        return -1;
    size_t i = live_home(t, addr, tag);
    while (t->slots[i].tag)
        i = (i + 1) & (t->n_slots - 1);
    t->slots[i] = (live_entry){ addr, tag, block };
    t->used++;
    return 0;
}

/* Remove an entry found by live_find (backward-shift deletion). */
static void live_remove(live_table *t, live_entry *e)
{
    size_t mask = t->n_slots - 1;
    size_t hole = (size_t)(e - t->slots);
    for (size_t i = (hole + 1) & mask; t->slots[i].tag; i = (i + 1) & mask) {
        size_t home = live_home(t, t->slots[i].addr, t->slots[i].tag);
        /* move i into the hole unless its home lies cyclically in (hole, i] */
        int stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    t->slots[hole].tag = 0;
    t->used--;
}

/* ---- per-thread scope stacks: (log, tid) -> thread slot ---------------- */

typedef struct thread_slot {
    uint64_t key;       /* log << 32 | tid, +1 so that 0 means empty */
    uint32_t *open;     /* indices of open spans, innermost last */
    size_t n_open, cap_open;
} thread_slot;

typedef struct thread_table {
    thread_slot *slots;
    size_t n_slots, used;
} thread_table;

static thread_slot *thread_get(thread_table *t, uint16_t log, uint32_t tid)
{
    uint64_t key = ((uint64_t)log << 32 | tid) + 1;
    if ((t->used + 1) * 2 > t->n_slots) {
        size_t n = t->n_slots ? t->n_slots * 2 : 64;
        thread_slot *slots = calloc(n, sizeof *slots);
        if (!slots)
            return NULL;
        for (size_t i = 0; i < t->n_slots; i++) {
            if (!t->slots[i].key)
                continue;
            size_t j = mix64(t->slots[i].key) & (n - 1);
            while (slots[j].key)
                j = (j + 1) & (n - 1);
            slots[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n;
    }
    size_t i = mix64(key) & (t->n_slots - 1);
    for (; t->slots[i].key; i = (i + 1) & (t->n_slots - 1))
        if (t->slots[i].key == key)
            return &t->slots[i];
    t->slots[i].key = key;
    t->used++;
    return &t->slots[i];
}

/* ---- the build --------------------------------------------------------- */

/* Replay state of one device, beside its mf_device_model. */
typedef struct device_build {
    size_t cap_blocks, cap_occupancy, cap_snapshots, cap_scopes;
    uint64_t *alloc_seq, *free_seq;   /* per block: merged event numbers */
    size_t cap_alloc_seq, cap_free_seq;
    uint64_t live_bytes, live_actual;
    uint64_t peak_seq;
    int32_t *scope_index;             /* model scope id -> index in scopes */
    size_t n_scope_index;
} device_build;

typedef struct build {
    mf_model *m;
    mf_log *const *logs;
    size_t n_logs;
    uint64_t since, until;
    string_table strings;
    uint32_t **string_maps;           /* per log: log string id -> model id */
    int32_t device_slot[1u << 16];    /* device -> index in m->devices, -1 */
    device_build *dev_builds;
    size_t cap_devices;
    live_table live;
    thread_table threads;
    size_t cap_spans, cap_activities, cap_pools, cap_warnings;
    uint64_t seq;                     /* merged event number */
    int oom;
} build;

static void warn(build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(build *b, const char *fmt, ...)
{
    mf_model *m = b->m;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *copy = strdup(line);
    if (!copy || mf_grow((void **)&m->warnings, &b->cap_warnings, m->n_warnings + 1,
                      sizeof(char *)) < 0) {
        free(copy);
        b->oom = 1;
        return;
    }
    m->warnings[m->n_warnings++] = copy;
}

/* The model id of a log's string id. */
static uint32_t map_string(build *b, uint16_t li, uint32_t id)
{
    const mf_log *log = b->logs[li];
    if (id == MF_STRING_UNKNOWN)
        return 0;
    if (id < log->n_strings && b->string_maps[li][id])
        return b->string_maps[li][id];
    uint32_t mid = intern(b->m, &b->strings, mf_log_string(log, id));
    if (mid == INTERN_FAILED) {
        b->oom = 1;
        return 0;
    }
    if (id < log->n_strings && mid)
        b->string_maps[li][id] = mid;
    return mid;
}

static mf_device_model *device_of(build *b, uint16_t device, device_build **db)
{
    mf_model *m = b->m;
    int32_t slot = b->device_slot[device];
    if (slot < 0) {
        size_t cap = b->cap_devices;
        if (mf_grow((void **)&m->devices, &cap, m->n_devices + 1, sizeof *m->devices) < 0 ||
            mf_grow((void **)&b->dev_builds, &b->cap_devices, m->n_devices + 1,
                 sizeof *b->dev_builds) < 0) {
            b->oom = 1;
            return NULL;
        }
        slot = (int32_t)m->n_devices++;
        memset(&m->devices[slot], 0, sizeof m->devices[slot]);
        memset(&b->dev_builds[slot], 0, sizeof b->dev_builds[slot]);
        m->devices[slot].device = device;
        m->devices[slot].min_addr = UINT64_MAX;
        b->device_slot[device] = slot;
    }
    *db = &b->dev_builds[slot];
    return &m->devices[slot];
}

static mf_scope_stat *scope_stat_of(build *b, mf_device_model *d, device_build *db,
                                    uint32_t scope)
{
    if (scope >= db->n_scope_index) {
        size_t n = db->n_scope_index ? db->n_scope_index : 16;
        while (n <= scope)
            n *= 2;
        int32_t *idx = realloc(db->scope_index, n * sizeof *idx);
        if (!idx) {
            b->oom = 1;
            return NULL;
        }
        for (size_t i = db->n_scope_index; i < n; i++)
            idx[i] = -1;
        db->scope_index = idx;
        db->n_scope_index = n;
    }
    if (db->scope_index[scope] < 0) {
        if (mf_grow((void **)&d->scopes, &db->cap_scopes, d->n_scopes + 1, sizeof *d->scopes) < 0) {
            b->oom = 1;
            return NULL;
        }
        mf_scope_stat *s = &d->scopes[d->n_scopes];
        memset(s, 0, sizeof *s);
        s->scope = scope;
        s->min_size = UINT64_MAX;
        db->scope_index[scope] = (int32_t)d->n_scopes++;
    }
    return &d->scopes[db->scope_index[scope]];
}

static void add_point(build *b, mf_device_model *d, device_build *db, uint64_t time_ns)
{
    if (mf_grow((void **)&d->occupancy, &db->cap_occupancy, d->n_occupancy + 1,
             sizeof *d->occupancy) < 0) {
        b->oom = 1;
        return;
    }
    d->occupancy[d->n_occupancy++] = (mf_point){ time_ns, db->live_bytes, db->live_actual };
    if (db->live_bytes > d->peak_bytes) {
        d->peak_bytes = db->live_bytes;
        d->peak_time_ns = time_ns;
        db->peak_seq = b->seq;
    }
}

static mf_kind_stat *kind_of(mf_device_model *d, uint16_t flags)
{
    return &d->kinds[((flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT) % MF_MODEL_KINDS];
}

/* End a live block at time_ns (a free, or an ALLOC over a live address). */
static void end_block(build *b, mf_device_model *d, device_build *db, live_entry *e,
                      uint64_t time_ns)
{
    mf_block *blk = &d->blocks[e->block];
    blk->free_ns = time_ns;
    db->free_seq[e->block] = b->seq;
    db->live_bytes -= blk->requested;
    db->live_actual -= blk->actual;
    kind_of(d, blk->flags)->live_bytes_end -= blk->requested;
    mf_scope_stat *s = scope_stat_of(b, d, db, blk->scope);
    if (s) {
        s->free_count++;
        s->live_bytes_end -= blk->requested;
        s->live_count_end--;
    }
    live_remove(&b->live, e);
}

static void count_alloc(mf_device_model *d, const mf_block *blk)
{
    mf_kind_stat *k = kind_of(d, blk->flags);
    k->alloc_count++;
    k->alloc_bytes += blk->requested;
    k->live_bytes_end += blk->requested;
    d->alloc_count++;
    d->alloc_bytes += blk->requested;
    d->alloc_actual_bytes += blk->actual;
    if (d->alloc_count == 1 || blk->requested < d->min_size)
        d->min_size = blk->requested;
    if (blk->requested > d->max_size)
        d->max_size = blk->requested;
    uint64_t extent = blk->actual > blk->requested ? blk->actual : blk->requested;
    if (blk->addr < d->min_addr)
        d->min_addr = blk->addr;
    uint64_t end = extent > UINT64_MAX - blk->addr ? UINT64_MAX : blk->addr + extent;
    if (end > d->max_addr)
        d->max_addr = end;
}

static void count_scope_alloc(mf_scope_stat *s, const mf_block *blk)
{
    s->alloc_count++;
    s->alloc_bytes += blk->requested;
    if (blk->requested < s->min_size)
        s->min_size = blk->requested;
    if (blk->requested > s->max_size)
        s->max_size = blk->requested;
    s->live_bytes_end += blk->requested;
    s->live_count_end++;
    if (s->live_bytes_end > s->peak_live_bytes) {
        s->peak_live_bytes = s->live_bytes_end;
        s->peak_live_time_ns = blk->alloc_ns;
    }
}

static void on_alloc(build *b, uint16_t li, const mf_event *e)
{
    device_build *db;
    mf_device_model *d = device_of(b, e->device, &db);
    if (!d)
        return;
    uint64_t tag = live_tag(li, e->device, e->flags);
    live_entry *old = live_find(&b->live, e->addr, tag);
    if (old) {
        end_block(b, d, db, old, e->time_ns);
        d->replaced_blocks++;
    }
    if (mf_grow((void **)&d->blocks, &db->cap_blocks, d->n_blocks + 1, sizeof *d->blocks) < 0 ||
        mf_grow((void **)&db->alloc_seq, &db->cap_alloc_seq, d->n_blocks + 1, sizeof(uint64_t)) < 0 ||
        mf_grow((void **)&db->free_seq, &db->cap_free_seq, d->n_blocks + 1, sizeof(uint64_t)) < 0 ||
        live_insert(&b->live, e->addr, tag, d->n_blocks) < 0) {
        b->oom = 1;
        return;
    }
    mf_block *blk = &d->blocks[d->n_blocks];
    *blk = (mf_block){
        .addr = e->addr, .requested = e->size, .actual = e->actual,
        .alloc_ns = e->time_ns, .free_ns = MF_LIVE_AT_END,
        .scope = map_string(b, li, e->scope), .name = map_string(b, li, e->name),
        .tid = e->tid, .pid = (uint32_t)b->logs[li]->header.pid,
        .device = e->device, .flags = e->flags,
    };
    db->alloc_seq[d->n_blocks] = b->seq;
    db->free_seq[d->n_blocks] = UINT64_MAX;
    d->n_blocks++;
    db->live_bytes += blk->requested;
    db->live_actual += blk->actual;
    count_alloc(d, blk);
    mf_scope_stat *s = scope_stat_of(b, d, db, blk->scope);
    if (s)
        count_scope_alloc(s, blk);
    add_point(b, d, db, e->time_ns);
}

static void on_free(build *b, uint16_t li, const mf_event *e)
{
    device_build *db;
    mf_device_model *d = device_of(b, e->device, &db);
    if (!d)
        return;
    live_entry *found = live_find(&b->live, e->addr, live_tag(li, e->device, e->flags));
    if (!found) {
        d->unknown_frees++;
        return;
    }
    end_block(b, d, db, found, e->time_ns);
    d->free_count++;
    add_point(b, d, db, e->time_ns);
}

static void on_sample(build *b, uint16_t li, const mf_event *e)
{
    const mf_log *log = b->logs[li];
    device_build *db;
    mf_device_model *d = device_of(b, e->device, &db);
    if (!d || e->extra >= log->n_samples)
        return;
    if (mf_grow((void **)&d->snapshots, &db->cap_snapshots, d->n_snapshots + 1,
             sizeof *d->snapshots) < 0) {
        b->oom = 1;
        return;
    }
    mf_snapshot *s = &d->snapshots[d->n_snapshots++];
    s->time_ns = e->time_ns;
    s->events_live = db->live_bytes;
    memcpy(s->value, log->samples[e->extra].value, sizeof s->value);
}

static void close_spans(build *b, thread_slot *t, uint32_t keep, uint64_t time_ns)
{
    while (t->n_open > keep)
        b->m->spans[t->open[--t->n_open]].end_ns = time_ns;
}

static void on_scope(build *b, uint16_t li, const mf_event *e)
{
    mf_model *m = b->m;
    thread_slot *t = thread_get(&b->threads, li, e->tid);
    if (!t) {
        b->oom = 1;
        return;
    }
    unsigned op = e->extra & 0xff, depth = e->extra >> 8;
    if (op == MF_SCOPE_POP) {
        close_spans(b, t, depth, e->time_ns);
        return;
    }
    if (op != MF_SCOPE_PUSH)
        return;
    close_spans(b, t, depth ? depth - 1 : 0, e->time_ns); /* pops that were lost */
    if (mf_grow((void **)&m->spans, &b->cap_spans, m->n_spans + 1, sizeof *m->spans) < 0 ||
        mf_grow((void **)&t->open, &t->cap_open, t->n_open + 1, sizeof *t->open) < 0) {
        b->oom = 1;
        return;
    }
    m->spans[m->n_spans] = (mf_span){
        .begin_ns = e->time_ns, .end_ns = UINT64_MAX, .scope = map_string(b, li, e->scope),
        .tid = e->tid, .pid = (uint32_t)b->logs[li]->header.pid, .depth = depth,
    };
    t->open[t->n_open++] = (uint32_t)m->n_spans++;
}

static void on_activity(build *b, uint16_t li, const mf_event *e)
{
    mf_model *m = b->m;
    if (mf_grow((void **)&m->activities, &b->cap_activities, m->n_activities + 1,
             sizeof *m->activities) < 0) {
        b->oom = 1;
        return;
    }
    m->activities[m->n_activities++] = (mf_activity){
        .start_ns = e->time_ns, .end_ns = e->actual > e->time_ns ? e->actual : e->time_ns,
        .bytes = e->size, .name = map_string(b, li, e->name), .stream = e->extra,
        .correlation = (uint32_t)e->addr, .pid = (uint32_t)b->logs[li]->header.pid,
        .device = e->device, .kind = e->flags,
    };
    if (e->actual > m->t1_ns)
        m->t1_ns = e->actual;
}

static void on_pool(build *b, uint16_t li, const mf_event *e)
{
    mf_model *m = b->m;
    if (mf_grow((void **)&m->pools, &b->cap_pools, m->n_pools + 1, sizeof *m->pools) < 0) {
        b->oom = 1;
        return;
    }
    m->pools[m->n_pools++] = (mf_pool_event){
        .time_ns = e->time_ns, .addr = e->addr, .size = e->size, .threshold = e->actual,
        .pid = (uint32_t)b->logs[li]->header.pid, .device = e->device, .op = (uint16_t)e->extra,
    };
}

static void on_note(build *b, uint16_t li, const mf_event *e)
{
    unsigned pid = (unsigned)b->logs[li]->header.pid;
    switch (e->extra) {
    case MF_NOTE_GPU_DROPPED:
        b->m->gpu_dropped += e->size;
        break;
    case MF_NOTE_GPU_OFF:
        warn(b, "pid %u: GPU capture was off (CUPTI result %llu)", pid,
             (unsigned long long)e->size);
        break;
    case MF_NOTE_SCOPE_OVERFLOW:
        warn(b, "pid %u: %llu scope pushes went past the 256-deep scope stack and were "
             "ignored", pid, (unsigned long long)e->size);
        break;
    }
}

static void replay(build *b, uint16_t li, const mf_event *e)
{
    /* every event's thread is known to the model */
    if (e->tid && !thread_get(&b->threads, li, e->tid))
        b->oom = 1;
    if (e->time_ns > b->m->t1_ns)
        b->m->t1_ns = e->time_ns;
    switch (e->type) {
    case MF_REC_ALLOC: on_alloc(b, li, e); break;
    case MF_REC_FREE: on_free(b, li, e); break;
    case MF_REC_SAMPLE: on_sample(b, li, e); break;
    case MF_REC_SCOPE: on_scope(b, li, e); break;
    case MF_REC_ACTIVITY: on_activity(b, li, e); break;
    case MF_REC_NOTE: on_note(b, li, e); break;
    case MF_REC_POOL: on_pool(b, li, e); break;
    default: break; /* STATE: not part of the model */
    }
}

/* First event index of log at or after since. */
static size_t first_event(const mf_log *log, uint64_t since)
{
    size_t lo = 0, hi = log->n_events;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (log->events[mid].time_ns < since)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Merge the logs' sorted events and replay them in time order. */
static int replay_all(build *b)
{
    size_t n = b->n_logs;
    size_t *at = calloc(n ? n : 1, sizeof *at);
    if (!at)
        return -1;
    b->m->t0_ns = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        at[i] = first_event(b->logs[i], b->since);
        if (at[i] < b->logs[i]->n_events && b->logs[i]->events[at[i]].time_ns <= b->until &&
            b->logs[i]->events[at[i]].time_ns < b->m->t0_ns)
            b->m->t0_ns = b->logs[i]->events[at[i]].time_ns;
    }
    if (b->m->t0_ns == UINT64_MAX)
        b->m->t0_ns = 0;
    b->m->t1_ns = b->m->t0_ns;
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i < n; i++) {
            const mf_log *log = b->logs[i];
            if (at[i] < log->n_events && log->events[at[i]].time_ns <= b->until &&
                (best == n || log->events[at[i]].time_ns < b->logs[best]->events[at[best]].time_ns))
                best = i;
        }
        if (best == n || b->oom)
            break;
        replay(b, (uint16_t)best, &b->logs[best]->events[at[best]++]);
        b->seq++;
    }
    free(at);
    return b->oom ? -1 : 0;
}

/* ---- finishing --------------------------------------------------------- */

/* Which scopes held bytes at each device's peak moment. */
static void fill_at_peak(build *b, mf_device_model *d, device_build *db)
{
    if (d->peak_bytes == 0)
        return;
    for (size_t i = 0; i < d->n_blocks; i++) {
        if (db->alloc_seq[i] > db->peak_seq || db->free_seq[i] <= db->peak_seq)
            continue;
        mf_scope_stat *s = scope_stat_of(b, d, db, d->blocks[i].scope);
        if (s) {
            s->at_peak_bytes += d->blocks[i].requested;
            s->at_peak_count++;
        }
    }
}

static int compare_scope_stat(const void *a, const void *b)
{
    uint32_t x = ((const mf_scope_stat *)a)->scope, y = ((const mf_scope_stat *)b)->scope;
    return x < y ? -1 : x > y;
}

static int compare_device(const void *a, const void *b)
{
    uint16_t x = ((const mf_device_model *)a)->device, y = ((const mf_device_model *)b)->device;
    return x < y ? -1 : x > y;
}

static void finish_device(build *b, mf_device_model *d, device_build *db)
{
    char name[16];
    fill_at_peak(b, d, db);
    d->live_bytes_end = db->live_bytes;
    d->live_count_end = 0;
    for (size_t i = 0; i < d->n_blocks; i++)
        if (d->blocks[i].free_ns == MF_LIVE_AT_END)
            d->live_count_end++;
    for (size_t i = 0; i < d->n_scopes; i++)
        if (d->scopes[i].min_size == UINT64_MAX)
            d->scopes[i].min_size = 0;
    if (d->n_scopes > 1) /* qsort's array must not be NULL, even when empty */
        qsort(d->scopes, d->n_scopes, sizeof *d->scopes, compare_scope_stat);
    if (d->min_addr == UINT64_MAX)
        d->min_addr = 0;
    mf_model_device_name(d->device, name, sizeof name);
    if (d->replaced_blocks)
        warn(b, "%s: %llu allocations at an address that was still live (a free was not "
             "recorded; the earlier block ends there)", name,
             (unsigned long long)d->replaced_blocks);
    if (d->unknown_frees)
        warn(b, "%s: %llu frees of addresses never seen allocated (allocated before "
             "recording started, or not recorded)", name, (unsigned long long)d->unknown_frees);
}

static char *join_argv(const mf_log *log)
{
    size_t len = 1;
    for (int i = 0; i < log->argc; i++)
        len += strlen(log->argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < log->argc; i++)
        p += sprintf(p, "%s%s", i ? " " : "", log->argv[i]);
    *p = 0;
    return s;
}

static void add_processes(build *b)
{
    mf_model *m = b->m;
    m->processes = calloc(b->n_logs ? b->n_logs : 1, sizeof *m->processes);
    if (!m->processes) {
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < b->n_logs; i++) {
        const mf_log *log = b->logs[i];
        mf_process_info *p = &m->processes[m->n_processes++];
        p->pid = (uint32_t)log->header.pid;
        p->ppid = (uint32_t)log->header.ppid;
        p->program = join_argv(log);
        p->log_path = strdup(log->path ? log->path : "");
        p->finished = (log->header.flags & MF_HEADER_FINISHED) != 0;
        if (!p->program || !p->log_path)
            b->oom = 1;
        if (log->damaged) {
            m->damaged = 1;
            warn(b, "%s", log->damage);
        }
    }
}

/* Every thread seen: its name from the log, or "thread TID". */
static void add_threads(build *b)
{
    mf_model *m = b->m;
    thread_table *t = &b->threads;
    m->threads = calloc(t->used ? t->used : 1, sizeof *m->threads);
    if (!m->threads) {
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < t->n_slots; i++) {
        if (!t->slots[i].key)
            continue;
        uint64_t key = t->slots[i].key - 1;
        uint16_t li = (uint16_t)(key >> 32);
        uint32_t tid = (uint32_t)key;
        const char *name = mf_log_thread_name(b->logs[li], tid);
        char fallback[32];
        if (!name) {
            snprintf(fallback, sizeof fallback, "thread %u", tid);
            name = fallback;
        }
        mf_thread_info *ti = &m->threads[m->n_threads++];
        ti->tid = tid;
        ti->pid = (uint32_t)b->logs[li]->header.pid;
        ti->name = intern(m, &b->strings, name);
        if (ti->name == INTERN_FAILED) {
            ti->name = 0;
            b->oom = 1;
        }
    }
}

static int compare_thread(const void *a, const void *b)
{
    const mf_thread_info *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void finish(build *b)
{
    mf_model *m = b->m;
    for (size_t i = 0; i < m->n_spans; i++)
        if (m->spans[i].end_ns == UINT64_MAX)
            m->spans[i].end_ns = m->t1_ns;
    add_processes(b);
    for (size_t i = 0; i < m->n_devices; i++)
        finish_device(b, &m->devices[i], &b->dev_builds[i]);
    if (m->n_devices > 1)
        qsort(m->devices, m->n_devices, sizeof *m->devices, compare_device);
    add_threads(b);
    if (m->n_threads > 1)
        qsort(m->threads, m->n_threads, sizeof *m->threads, compare_thread);
    if (m->gpu_dropped)
        warn(b, "GPU: %llu CUPTI activity records were dropped (their allocations are "
             "missing)", (unsigned long long)m->gpu_dropped);
}

static int start(build *b)
{
    mf_model *m = b->m;
    memset(b->device_slot, 0xff, sizeof b->device_slot);
    if (mf_grow((void **)&m->strings, &b->strings.cap_strings, 1, sizeof(char *)) < 0 ||
        !(m->strings[0] = strdup("unknown")))
        return -1;
    m->n_strings = 1;
    if (intern(m, &b->strings, "<unk>:") != MF_STRING_DEFAULT_SCOPE)
        return -1;
    b->string_maps = calloc(b->n_logs ? b->n_logs : 1, sizeof *b->string_maps);
    if (!b->string_maps)
        return -1;
    for (size_t i = 0; i < b->n_logs; i++) {
        b->string_maps[i] = calloc(b->logs[i]->n_strings + 1, sizeof(uint32_t));
        if (!b->string_maps[i])
            return -1;
    }
    return 0;
}

static void build_free(build *b)
{
    for (size_t i = 0; b->string_maps && i < b->n_logs; i++)
        free(b->string_maps[i]);
    free(b->string_maps);
    free(b->strings.slots);
    for (size_t i = 0; i < b->m->n_devices; i++) {
        free(b->dev_builds[i].alloc_seq);
        free(b->dev_builds[i].free_seq);
        free(b->dev_builds[i].scope_index);
    }
    free(b->dev_builds);
    free(b->live.slots);
    for (size_t i = 0; i < b->threads.n_slots; i++)
        free(b->threads.slots[i].open);
    free(b->threads.slots);
}

mf_model *mf_model_build_window(mf_log *const *logs, size_t n, uint64_t since_ns,
                                uint64_t until_ns, char *err, size_t errlen)
{
    mf_model *m = calloc(1, sizeof *m);
    build *b = calloc(1, sizeof *b);
    if (!m || !b) {
        free(m);
        free(b);
        snprintf(err, errlen, "out of memory building the model");
        return NULL;
    }
    *b = (build){ .m = m, .logs = logs, .n_logs = n, .since = since_ns, .until = until_ns };
    m->since_ns = since_ns;
    m->until_ns = until_ns;
    if (start(b) < 0 || replay_all(b) < 0)
        b->oom = 1;
    if (!b->oom)
        finish(b);
    int oom = b->oom;
    build_free(b);
    free(b);
    if (oom) {
        mf_model_free(m);
        snprintf(err, errlen, "out of memory building the model");
        return NULL;
    }
    return m;
}

mf_model *mf_model_build(mf_log *const *logs, size_t n, uint64_t until_ns, char *err,
                         size_t errlen)
{
    return mf_model_build_window(logs, n, 0, until_ns, err, errlen);
}

mf_model *mf_model_load(const char *const *paths, size_t n, uint64_t until_rel_ns, char *err,
                        size_t errlen)
{
    mf_log **logs = calloc(n ? n : 1, sizeof *logs);
    mf_model *m = NULL;
    if (!logs) {
        snprintf(err, errlen, "out of memory reading the logs");
        return NULL;
    }
    uint64_t t0 = UINT64_MAX;
    size_t i;
    for (i = 0; i < n; i++) {
        if (mf_log_read(paths[i], &logs[i], err, errlen) < 0)
            goto out;
        if (logs[i]->n_events && logs[i]->events[0].time_ns < t0)
            t0 = logs[i]->events[0].time_ns;
    }
    uint64_t until = UINT64_MAX;
    if (until_rel_ns != UINT64_MAX && t0 != UINT64_MAX)
        until = until_rel_ns > UINT64_MAX - t0 ? UINT64_MAX : t0 + until_rel_ns;
    m = mf_model_build(logs, n, until, err, errlen);
out:
    for (size_t j = 0; j < n; j++)
        mf_log_free(logs[j]);
    free(logs);
    return m;
}

void mf_model_free(mf_model *model)
{
    if (!model)
        return;
    for (uint32_t i = 0; i < model->n_strings; i++)
        free(model->strings[i]);
    free(model->strings);
    for (size_t i = 0; i < model->n_devices; i++) {
        mf_device_model *d = &model->devices[i];
        free(d->blocks);
        free(d->occupancy);
        free(d->snapshots);
        free(d->scopes);
    }
    free(model->devices);
    free(model->spans);
    free(model->activities);
    free(model->pools);
    free(model->threads);
    for (size_t i = 0; i < model->n_processes; i++) {
        free(model->processes[i].program);
        free(model->processes[i].log_path);
    }
    free(model->processes);
    for (size_t i = 0; i < model->n_warnings; i++)
        free(model->warnings[i]);
    free(model->warnings);
    free(model);
}

const char *mf_model_string(const mf_model *model, uint32_t id)
{
    if (id == 0 || id >= model->n_strings)
        return "unknown";
    return model->strings[id];
}

const mf_device_model *mf_model_device(const mf_model *model, uint16_t device)
{
    for (size_t i = 0; i < model->n_devices; i++)
        if (model->devices[i].device == device)
            return &model->devices[i];
    return NULL;
}

const mf_scope_stat *mf_model_scope(const mf_device_model *dev, uint32_t scope)
{
    size_t lo = 0, hi = dev->n_scopes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (dev->scopes[mid].scope == scope)
            return &dev->scopes[mid];
        if (dev->scopes[mid].scope < scope)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *mf_model_device_name(uint16_t device, char *buf, size_t len)
{
    return mf_device_name(device, buf, len);
}

int mf_model_device_parse(const char *text, uint16_t *device)
{
    return text ? mf_device_parse(text, device) : -1;
}
