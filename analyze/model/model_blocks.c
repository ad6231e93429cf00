/*
 * model_blocks.c - blocks (see model_blocks.h): an allocation starts one,
 * a free, an allocation over its still-live address, or its process's end
 * ends it.  Each change updates the counts, the occupancy curves and peaks,
 * and the per-scope statistics of the device and of the process's view, in
 * O(1); an ended block goes to the picture (model_picture.c), and, never
 * freed, to the leaks.  See model.h for what each count means.
 */
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "grow.h"
#include "keyed.h"
#include "model_blocks.h"
#include "steps.h"
#include "series.h"
#include "sites.h"

/* Budgets: what the blocks keep at most, whatever the log. */
#define DEVICE_POINTS (1u << 17)      /* occupancy points per device */
#define DEVICE_SNAPSHOTS 30000u       /* samples per device */
#define VIEW_POINTS_ALL (1u << 20)    /* occupancy points, all views together */
#define VIEW_POINTS_MIN 1024u
#define VIEW_POINTS_MAX 16384u
#define VIEW_SNAPSHOTS 4096u

typedef struct mf_blocks_device {
    uint16_t device;
    mf_counts counts;
    mf_kind_stat kinds[MF_MODEL_KINDS];
    uint64_t use_min_bytes;   /* MXNet's usage counter: its smallest value */
    double use_sum_bytes;     /* and its values summed (mf_device_model) */
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;           /* peaks reached */
    mf_keyed scopes;          /* by scope string id */
    mf_keyed sites;           /* by site id (sites.h), when the logs have stacks */
    mf_scope_held *stacks;    /* by stack id: what each holds, for the stacks live at
                                 the peak (every stack of the logs, 40 bytes each) */
    size_t n_stacks;
    mf_keyed roles;           /* by role (mf_block.role & MF_ROLE_MASK) */
    mf_keyed names;           /* by name string id (0: no name) */
    mf_keyed exit_held;       /* held at exit by interpreters, by site (scope) id */
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
    mf_scope_stat *scopes_out, *sites_out;   /* what the last settle made */
    mf_stack_share *stacks_out;
    mf_scope_stat *roles_out, *names_out, *exit_out;
    mf_steps steps;           /* each step marked while counting */
} mf_blocks_device;

typedef struct mf_blocks_view {
    uint32_t slot;            /* its device's */
    uint32_t pid;
    mf_counts counts;
    mf_series occupancy;
    mf_snapshots snapshots;
    uint64_t epoch;           /* peaks reached */
    uint64_t held_actual;     /* actual bytes held now */
    uint64_t unfreed_bytes, unfreed_count;   /* ended with their process */
} mf_blocks_view;

typedef struct mf_blocks_process {
    uint32_t pid;
    int forked;
    int training;             /* it named a tensor: its training began */
    int interpreter;          /* a Python interpreter: held at exit is not a leak */
    uint32_t steps;           /* step marks seen */
    mf_block *gpu_unfreed;    /* GPU blocks it held when it ended */
    size_t n_gpu_unfreed, cap_gpu_unfreed;
} mf_blocks_process;

void mf_blocks_init(mf_blocks *b, mf_picture *picture)
{
    memset(b, 0, sizeof *b);
    b->counting = 1;
    b->picture = picture;
    b->view_points = VIEW_POINTS_MAX;
}

void mf_blocks_set_observer(mf_blocks *b, void (*fn)(void *ctx, const mf_block *blk, int ended),
                            void (*role_fn)(void *ctx, const mf_block *blk, unsigned from,
                                            uint64_t time_ns),
                            void *ctx)
{
    b->on_block = fn;
    b->on_role = role_fn;
    b->on_block_ctx = ctx;
}

void mf_blocks_set_sites(mf_blocks *b, struct mf_sites *sites)
{
    b->sites = sites;
}

int mf_blocks_add_device(mf_blocks *b, uint16_t device)
{
    mf_blocks_device *d = calloc(1, sizeof *d);
    if (!d || mf_grow((void **)&b->devs, &b->cap_devs, b->n_devs + 1, sizeof *b->devs) < 0) {
        free(d);
        return -1;
    }
    d->device = device;
    d->counts.min_addr = UINT64_MAX;
    mf_series_init(&d->occupancy, DEVICE_POINTS);
    mf_snapshots_init(&d->snapshots, DEVICE_SNAPSHOTS);
    d->names.limit = MF_MODEL_NAMES;
    b->devs[b->n_devs++] = d;
    return 0;
}

int mf_blocks_add_view(mf_blocks *b, uint32_t slot, uint32_t pid)
{
    mf_blocks_view *v = calloc(1, sizeof *v);
    if (!v || mf_grow((void **)&b->views, &b->cap_views, b->n_views + 1, sizeof *b->views) < 0) {
        free(v);
        return -1;
    }
    v->slot = slot;
    v->pid = pid;
    v->counts.min_addr = UINT64_MAX;
    mf_series_init(&v->occupancy, b->view_points);
    mf_snapshots_init(&v->snapshots, VIEW_SNAPSHOTS);
    b->views[b->n_views++] = v;
    size_t points = mf_budget_share(VIEW_POINTS_ALL, b->n_views, VIEW_POINTS_MIN,
                                    VIEW_POINTS_MAX);
    if (points != b->view_points) {
        b->view_points = points;
        for (size_t i = 0; i < b->n_views; i++)
            mf_series_set_limit(&b->views[i]->occupancy, points);
    }
    return 0;
}

/* The state of process image log, created if new; NULL when out of memory. */
static mf_blocks_process *process(mf_blocks *b, uint16_t log)
{
    if (log >= b->n_procs) {
        mf_blocks_process *procs = realloc(b->procs, ((size_t)log + 1) * sizeof *procs);
        if (!procs)
            return NULL;
        memset(procs + b->n_procs, 0, ((size_t)log + 1 - b->n_procs) * sizeof *procs);
        b->procs = procs;
        b->n_procs = (size_t)log + 1;
    }
    return &b->procs[log];
}

int mf_blocks_set_process(mf_blocks *b, uint16_t log, uint32_t pid, int forked,
                          int interpreter)
{
    mf_blocks_process *p = process(b, log);
    if (!p)
        return -1;
    p->pid = pid;
    p->forked = forked;
    p->interpreter |= interpreter;
    return 0;
}

int mf_blocks_training(const mf_blocks *b, uint16_t log, uint32_t *steps)
{
    const mf_blocks_process *p = log < b->n_procs ? &b->procs[log] : NULL;
    *steps = p ? p->steps : 0;
    return p && p->training;
}

int mf_blocks_interpreter(const mf_blocks *b, uint16_t log)
{
    return log < b->n_procs && b->procs[log].interpreter;
}

/* ---- scopes, sites and stacks ------------------------------------------------- */

/* The entry of key in t, created if new; NULL (and oom) when out of memory. */
static mf_keyed_entry *keyed(mf_blocks *b, mf_keyed *t, uint32_t key)
{
    mf_keyed_entry *s = mf_keyed_get(t, key);
    if (!s)
        b->oom = 1;
    return s;
}

/* What stack holds on device d (when the model has sites); NULL (and oom)
 * when out of memory. */
static mf_scope_held *stack_held(mf_blocks *b, mf_blocks_device *d, uint32_t stack)
{
    if (stack >= d->n_stacks &&
        mf_grow_filled((void **)&d->stacks, &d->n_stacks, (size_t)stack + 1, sizeof *d->stacks,
                       0) < 0) {
        b->oom = 1;
        return NULL;
    }
    return &d->stacks[stack];
}

/* The keys a block counts under on its device: scope, site (with stacks),
 * role and name; its stack (held only, with stacks) apart.  Entries that
 * could not be made are NULL (b->oom is set). */
enum { KEY_SCOPE, KEY_SITE, KEY_ROLE, KEY_NAME, KEYS };

static mf_scope_held *block_keys(mf_blocks *b, mf_blocks_device *d, uint32_t scope,
                                 uint32_t stack, uint8_t role, uint32_t name,
                                 mf_keyed_entry *keys[KEYS])
{
    mf_scope_held *st = NULL;
    keys[KEY_SCOPE] = keyed(b, &d->scopes, scope);
    keys[KEY_SITE] = NULL;
    if (b->sites) {
        keys[KEY_SITE] = keyed(b, &d->sites, mf_sites_of_stack(b->sites, stack));
        st = stack_held(b, d, stack);
    }
    keys[KEY_ROLE] = keyed(b, &d->roles, role & MF_ROLE_MASK);
    keys[KEY_NAME] = keyed(b, &d->names, name);
    return st;
}

/* ---- counts -------------------------------------------------------------------- */

/* A block held from now on: its addresses, the bytes held. */
static void counts_hold(mf_counts *c, uint64_t addr, uint64_t requested, uint64_t actual)
{
    uint64_t extent = actual > requested ? actual : requested;
    uint64_t end = extent > UINT64_MAX - addr ? UINT64_MAX : addr + extent;
    c->min_addr = addr < c->min_addr ? addr : c->min_addr;
    c->max_addr = end > c->max_addr ? end : c->max_addr;
    c->held_bytes += requested;
    c->held_count++;
}

static void counts_alloc(mf_counts *c, uint64_t addr, uint64_t requested, uint64_t actual)
{
    c->alloc_count++;
    c->alloc_bytes += requested;
    c->alloc_actual_bytes += actual;
    if (c->alloc_count == 1 || requested < c->min_size)
        c->min_size = requested;
    c->max_size = requested > c->max_size ? requested : c->max_size;
    counts_hold(c, addr, requested, actual);
}

/* MXNet's usage counter of a device took a new value (after an allocation,
 * or a free that ended a block). */
static void counter_update(mf_blocks_device *d)
{
    if (d->counts.alloc_count + d->counts.free_count == 1 ||
        d->counts.held_bytes < d->use_min_bytes)
        d->use_min_bytes = d->counts.held_bytes;
    d->use_sum_bytes += (double)d->counts.held_bytes;
}

/* A new peak: its value, its first moment, and one more epoch. */
static void counts_peak(mf_counts *c, uint64_t *epoch, uint64_t time_ns)
{
    if (c->held_bytes > c->peak_bytes) {
        c->peak_bytes = c->held_bytes;
        c->peak_time_ns = time_ns;
        (*epoch)++;
    }
}

static mf_kind_stat *kind_of(mf_blocks_device *d, uint16_t flags)
{
    return &d->kinds[((flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT) % MF_MODEL_KINDS];
}

static void add_points(mf_blocks *b, mf_blocks_device *d, mf_blocks_view *v, uint64_t time_ns)
{
    if (b->no_curves)
        return;
    if (mf_series_add(&d->occupancy, time_ns, d->counts.held_bytes, d->held_actual) < 0 ||
        mf_series_add(&v->occupancy, time_ns, v->counts.held_bytes, v->held_actual) < 0)
        b->oom = 1;
}

/* ---- the life of a block -------------------------------------------------------------- */

/* The block of live entry e as it stands at the model's end. */
static void live_block(const mf_blocks *b, const mf_live *e, mf_block *out)
{
    *out = (mf_block){
        .addr = e->addr, .requested = e->requested, .actual = e->actual,
        .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope, .name = e->name,
        .tid = e->tid, .pid = e->log < b->n_procs ? b->procs[e->log].pid : 0, .stack = e->stack,
        .device = e->device, .flags = e->flags, .end = MF_BLOCK_LIVE, .role = e->role,
        .entered = e->entered,
    };
}

static int by_requested_worse(const void *pa, const void *pb)
{
    const mf_block *a = pa, *b = pb;     /* a ranks below b: smaller, later, higher */
    if (a->requested != b->requested)
        return a->requested < b->requested;
    if (a->alloc_ns != b->alloc_ns)
        return a->alloc_ns > b->alloc_ns;
    return a->addr > b->addr;
}

static uint64_t requested_key(const void *b)
{
    return ((const mf_block *)b)->requested;
}

/* A block its process ended with: a leak candidate (unless only held at an
 * interpreter's exit), and on a GPU one of the blocks MXNet's CSV lists. */
static void keep_unfreed(mf_blocks *b, uint16_t log, const mf_block *blk, int leak)
{
    if (!b->leaks.worse)
        mf_topk_init(&b->leaks, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                     requested_key);
    if (leak && mf_topk_offer(&b->leaks, blk, NULL) < 0)
        b->oom = 1;
    if (MF_DEVICE_KIND(blk->device) != MF_DEVICE_GPU)
        return;
    mf_blocks_process *p = process(b, log);
    if (!p || mf_grow((void **)&p->gpu_unfreed, &p->cap_gpu_unfreed, p->n_gpu_unfreed + 1,
                      sizeof *p->gpu_unfreed) < 0)
        b->oom = 1;
    else
        p->gpu_unfreed[p->n_gpu_unfreed++] = *blk;
}

/* Whether block e, held when its process ended, is memory an interpreter
 * holds at exit rather than a leak: its process is a Python interpreter and
 * the program's own code did not allocate it (the innermost Python frame
 * of its stack is a library's, or it has none; site: its entry in
 * d->sites, or NULL).  Counted in d->exit_held by site (by scope without
 * stacks). */
static int held_at_exit(mf_blocks *b, mf_blocks_device *d, const mf_live *e,
                        const mf_keyed_entry *site)
{
    if (e->log >= b->n_procs || !b->procs[e->log].interpreter)
        return 0;
    if (b->sites && mf_sites_stack_own(b->sites, e->stack))
        return 0;
    mf_keyed_entry *k = keyed(b, &d->exit_held, b->sites ? (site ? site->s.scope : 0) : e->scope);
    if (k)
        mf_keyed_alloc(k, d->epoch, e->requested, 0);
    return 1;
}

/* Live block e of device d changes role (a key of d->roles) to role at
 * time_ns (the observer is told). */
static void change_role(mf_blocks *b, mf_blocks_device *d, mf_live *e, unsigned role,
                        uint64_t time_ns)
{
    unsigned from = e->role;
    if (b->counting) {
        /* to first: making it may move the table; from is already there */
        mf_keyed_entry *to = keyed(b, &d->roles, role & MF_ROLE_MASK);
        mf_keyed_entry *from_key = keyed(b, &d->roles, e->role & MF_ROLE_MASK);
        if (from_key && to)
            mf_keyed_move(from_key, to, d->epoch, e->requested, d->epoch > e->epoch0,
                          !e->entered);
    }
    e->role = (uint8_t)((e->role & ~MF_ROLE_MASK) | (role & MF_ROLE_MASK));
    if (b->on_role && b->counting && (from & MF_ROLE_MASK) != (role & MF_ROLE_MASK)) {
        mf_block now = {
            .addr = e->addr, .requested = e->requested, .actual = e->actual,
            .alloc_ns = e->alloc_ns, .free_ns = MF_LIVE_AT_END, .scope = e->scope,
            .name = e->name, .tid = e->tid, .pid = b->views[e->view]->pid, .stack = e->stack,
            .device = e->device, .flags = e->flags, .end = MF_BLOCK_LIVE, .role = e->role,
            .entered = e->entered,
        };
        b->on_role(b->on_block_ctx, &now, from, time_ns);
    }
}

/* End live block id (its key's hash: hash) at time_ns, the way `how`
 * says (a process's end adds its curve points once, after all its blocks).
 * Before the window, it only leaves the live table. */
static void end_block(mf_blocks *b, uint32_t id, uint32_t hash, unsigned how, uint64_t time_ns)
{
    mf_live *e = mf_live_get(&b->live, id);
    if (!b->counting) {
        mf_live_remove_at(&b->live, id, hash);
        return;
    }
    mf_blocks_view *v = b->views[e->view];
    mf_blocks_device *d = b->devs[v->slot];
    uint64_t req = e->requested;
    /* freed within the step it was allocated in, with no role of its own */
    if (how == MF_BLOCK_FREED && (e->role & (MF_ROLE_MASK | MF_ROLE_NAMED)) == MF_ROLE_OTHER &&
        e->log < b->n_procs && e->step == b->procs[e->log].steps)
        change_role(b, d, e, MF_ROLE_TEMPORARY, time_ns);
    d->counts.held_bytes -= req;
    d->counts.held_count--;
    d->held_actual -= e->actual;
    v->counts.held_bytes -= req;
    v->counts.held_count--;
    v->held_actual -= e->actual;
    mf_keyed_entry *keys[KEYS];
    mf_scope_held *stack = block_keys(b, d, e->scope, e->stack, e->role, e->name, keys);
    if (stack)
        mf_scope_held_change(stack, d->epoch, -(int64_t)req, -1);
    for (int k = 0; k < KEYS; k++) {
        if (!keys[k])
            continue;
        mf_scope_held_change(&keys[k]->held, d->epoch, -(int64_t)req, -1);
        if (how == MF_BLOCK_FREED)
            keys[k]->s.free_count++;
        if (how == MF_BLOCK_PROCESS_ENDED) {
            keys[k]->s.live_bytes_end += req;
            keys[k]->s.live_count_end++;
        }
    }
    if (how == MF_BLOCK_FREED) {
        d->counts.free_count++;
        counter_update(d);
        v->counts.free_count++;
    }
    if (how == MF_BLOCK_PROCESS_ENDED) {
        d->unfreed_bytes += req;
        d->unfreed_count++;
        v->unfreed_bytes += req;
        v->unfreed_count++;
    } else {
        kind_of(d, e->flags)->live_bytes_end -= req;
        add_points(b, d, v, time_ns);
    }
    mf_block blk = {
        .addr = e->addr, .requested = req, .actual = e->actual, .alloc_ns = e->alloc_ns,
        .free_ns = time_ns, .scope = e->scope, .name = e->name, .tid = e->tid,
        .pid = v->pid, .stack = e->stack, .device = e->device, .flags = e->flags,
        .end = (uint8_t)how, .role = e->role, .entered = e->entered,
    };
    if (how == MF_BLOCK_PROCESS_ENDED)
        keep_unfreed(b, e->log, &blk, !held_at_exit(b, d, e, keys[KEY_SITE]));
    if (b->picture && mf_picture_retire(b->picture, e->view, v->epoch, &blk) < 0)
        b->oom = 1;
    if (b->on_block)
        b->on_block(b->on_block_ctx, &blk, 1);
    mf_live_remove_at(&b->live, id, hash);
}

/* A block live on entry to the window: held, not allocated. */
static void counts_enter(mf_counts *c, uint64_t addr, uint64_t requested, uint64_t actual)
{
    counts_hold(c, addr, requested, actual);
    c->entry_bytes += requested;
    c->entry_count++;
}

/* Count live block id from time_ns: an allocation, or (entry) a block live
 * on entry to the window, which then starts there. */
static void count_start(mf_blocks *b, uint32_t id, uint64_t time_ns, int entry)
{
    mf_live *l = mf_live_get(&b->live, id);
    mf_blocks_view *v = b->views[l->view];
    mf_blocks_device *d = b->devs[v->slot];
    uint64_t req = l->requested;
    l->epoch0 = d->epoch;
    l->vepoch0 = v->epoch;
    if (entry) {
        l->entered = 1;
        l->alloc_ns = time_ns;
        counts_enter(&d->counts, l->addr, req, l->actual);
        counts_enter(&v->counts, l->addr, req, l->actual);
    } else {
        counts_alloc(&d->counts, l->addr, req, l->actual);
        counter_update(d);
        counts_alloc(&v->counts, l->addr, req, l->actual);
        kind_of(d, l->flags)->alloc_count++;
        kind_of(d, l->flags)->alloc_bytes += req;
    }
    d->held_actual += l->actual;
    v->held_actual += l->actual;
    kind_of(d, l->flags)->live_bytes_end += req;
    mf_keyed_entry *keys[KEYS];
    mf_scope_held *stack = block_keys(b, d, l->scope, l->stack, l->role, l->name, keys);
    if (keys[KEY_SITE] && !entry && l->log < b->n_procs &&
        mf_sites_get(b->sites, keys[KEY_SITE]->s.scope)->kind != MF_SITE_NATIVE)
        b->procs[l->log].interpreter = 1;     /* Python frames: an interpreter */
    for (int k = 0; k < KEYS; k++) {
        if (keys[k] && entry)
            mf_keyed_enter(keys[k], d->epoch, req, time_ns);
        else if (keys[k])
            mf_keyed_alloc(keys[k], d->epoch, req, time_ns);
    }
    if (stack)
        mf_scope_held_change(stack, d->epoch, (int64_t)req, 1);
    if (b->picture && mf_picture_alloc(b->picture, l->view, v->epoch, l) < 0)
        b->oom = 1;
    counts_peak(&d->counts, &d->epoch, time_ns);
    counts_peak(&v->counts, &v->epoch, time_ns);
    mf_steps_held(&d->steps, req, !entry, d->counts.held_bytes, time_ns);
    add_points(b, d, v, time_ns);
}

/* The key hash of allocation or free e (of a block at addr): the one
 * mf_blocks_at_hand gave when e is the event at hand. */
static uint32_t event_hash(const mf_blocks *b, const mf_event *e, unsigned flags, uint64_t addr)
{
    return e == b->hand ? b->hand_hash : mf_live_hash(e->log, e->device, flags, addr);
}

int mf_blocks_on_alloc(mf_blocks *b, const mf_event *e, uint32_t view)
{
    const mf_ev_alloc *a = &e->alloc;
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    uint32_t hash = event_hash(b, e, a->flags, a->addr);
    uint32_t old = mf_live_find_at(&b->live, hash, e->log, e->device, a->flags, a->addr);
    if (old) {   /* the same key: the same hash */
        end_block(b, old, hash, MF_BLOCK_REPLACED, e->time_ns);
        if (b->counting) {
            d->counts.replaced_blocks++;
            v->counts.replaced_blocks++;
        }
    }
    const mf_blocks_process *p = e->log < b->n_procs ? &b->procs[e->log] : NULL;
    mf_live l = {
        .addr = a->addr, .requested = a->requested, .actual = a->actual, .alloc_ns = e->time_ns,
        .scope = a->scope, .name = a->name, .tid = e->tid, .stack = a->stack,
        .view = view, .step = p ? p->steps : 0, .device = e->device, .flags = a->flags,
        .log = e->log, .role = p && p->training ? MF_ROLE_OTHER : MF_ROLE_UNKNOWN,
    };
    uint32_t id = mf_live_insert_at(&b->live, &l, hash);
    if (!id)
        return -1;
    if (b->on_block) {
        mf_block told = {
            .addr = a->addr, .requested = a->requested, .actual = a->actual,
            .alloc_ns = e->time_ns, .free_ns = MF_LIVE_AT_END, .scope = a->scope,
            .name = a->name, .tid = e->tid, .pid = v->pid, .stack = a->stack,
            .device = e->device, .flags = a->flags, .end = MF_BLOCK_LIVE, .role = l.role,
        };
        b->on_block(b->on_block_ctx, &told, 0);
    }
    if (b->counting)
        count_start(b, id, e->time_ns, 0);
    return b->oom ? -1 : 0;
}

void mf_blocks_pause(mf_blocks *b)
{
    b->counting = 0;
}

int mf_blocks_enter(mf_blocks *b, uint64_t time_ns)
{
    b->counting = 1;
    for (size_t log = 0; log < b->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&b->live, (uint16_t)log); id;) {
            uint32_t next = mf_live_get(&b->live, id)->next;
            count_start(b, id, time_ns, 1);
            id = next;
        }
    return b->oom ? -1 : 0;
}

int mf_blocks_on_free(mf_blocks *b, const mf_event *e)
{
    uint32_t hash = event_hash(b, e, e->free.flags, e->free.addr);
    uint32_t id = mf_live_find_at(&b->live, hash, e->log, e->device, e->free.flags, e->free.addr);
    if (!id)
        return 0;
    end_block(b, id, hash, MF_BLOCK_FREED, e->time_ns);
    return b->oom ? -1 : 1;
}

/* Live block e's legend key changed from from_key to to_key. */
static void legend_rekey(mf_blocks *b, const mf_live *e, uint32_t from_key, uint32_t to_key)
{
    if (!b->counting || !b->picture)
        return;
    const mf_blocks_view *v = b->views[e->view];
    if (mf_picture_rekey(b->picture, e->view, v->epoch, e, from_key, to_key,
                         v->epoch > e->vepoch0) < 0)
        b->oom = 1;
}

/* Process image log named its first tensor: its training began.  Its
 * blocks live now, with no role, are held from before training. */
static void training_begins(mf_blocks *b, uint16_t log)
{
    mf_blocks_process *p = process(b, log);
    if (!p) {
        b->oom = 1;
        return;
    }
    if (p->training)
        return;
    p->training = 1;
    for (uint32_t id = mf_live_first(&b->live, log); id;) {
        mf_live *e = mf_live_get(&b->live, id);
        id = e->next;
        if ((e->role & MF_ROLE_MASK) != MF_ROLE_UNKNOWN)
            continue;
        e->role |= MF_ROLE_BEFORE_TRAINING;
        legend_rekey(b, e, e->scope, MF_LEGEND_BEFORE_TRAINING);
    }
}

/* Live block e gets name (and role, unless 0) at time_ns. */
static void rename_block(mf_blocks *b, mf_live *e, uint32_t name, unsigned role,
                         uint64_t time_ns)
{
    mf_blocks_device *d = b->devs[b->views[e->view]->slot];
    if (name != e->name && b->counting) {
        mf_keyed_entry *to = keyed(b, &d->names, name), *from = keyed(b, &d->names, e->name);
        if (from && to)
            mf_keyed_move(from, to, d->epoch, e->requested, d->epoch > e->epoch0, !e->entered);
    }
    e->name = name;
    if (role) {
        change_role(b, d, e, role, time_ns);
        if (e->role & MF_ROLE_BEFORE_TRAINING)
            legend_rekey(b, e, MF_LEGEND_BEFORE_TRAINING, e->scope);
        e->role = (uint8_t)((e->role & ~MF_ROLE_BEFORE_TRAINING) | MF_ROLE_NAMED);
    }
}

int mf_blocks_on_name(mf_blocks *b, const mf_event *e, int named_elsewhere)
{
    const mf_ev_trace *t = &e->trace;
    uint16_t device = (uint16_t)t->arg;
    unsigned role = (unsigned)(t->arg >> 16) & MF_ROLE_MASK;
    training_begins(b, e->log);
    if (named_elsewhere)
        return b->oom ? -1 : 0;
    uint32_t id = mf_live_find(&b->live, e->log, device, 0, t->value);
    if (!id)
        id = mf_live_find(&b->live, e->log, device, MF_FLAG_EXPLICIT, t->value);
    if (id)
        rename_block(b, mf_live_get(&b->live, id), t->name, role, e->time_ns);
    return b->oom ? -1 : 0;
}

/* A step mark at time_ns: the device's current step ends, the next begins;
 * its scopes and sites note what they hold. */
static void device_step(mf_blocks *b, mf_blocks_device *d, uint64_t number, uint64_t time_ns)
{
    mf_keyed_mark(&d->scopes);
    mf_keyed_mark(&d->sites);
    if (mf_steps_mark(&d->steps, number, time_ns, d->counts.held_bytes) < 0)
        b->oom = 1;
}

int mf_blocks_on_step(mf_blocks *b, const mf_event *e, uint32_t pid)
{
    mf_blocks_process *p = process(b, e->log);
    if (!p)
        return -1;
    p->steps++;
    if (!b->counting)
        return 0;
    for (size_t i = 0; i < b->n_devs; i++)
        device_step(b, b->devs[i], e->trace.value, e->time_ns);
    if (b->n_marks < MF_MODEL_STEPS) {
        if (mf_grow((void **)&b->marks, &b->cap_marks, b->n_marks + 1, sizeof *b->marks) < 0)
            return -1;
        b->marks[b->n_marks++] = (mf_step_mark){ e->time_ns, e->trace.value, pid, e->trace.name };
    }
    return b->oom ? -1 : 0;
}

void mf_blocks_on_unknown_free(mf_blocks *b, const mf_event *e, uint32_t view)
{
    if (!b->counting)
        return;
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    /* A forked child starts as a copy of its parent's heap: a free of an
     * address it never allocated frees memory it inherited at the fork
     * (whether or not the parent still holds its own copy). */
    if (e->log < b->n_procs && b->procs[e->log].forked) {
        d->counts.inherited_frees++;
        v->counts.inherited_frees++;
        return;
    }
    d->counts.unknown_frees++;
    v->counts.unknown_frees++;
}

int mf_blocks_on_process_end(mf_blocks *b, uint16_t log, uint64_t time_ns,
                             const uint32_t *view_of, size_t n_view_of)
{
    int any = 0;
    for (uint32_t id = mf_live_first(&b->live, log); id;) {
        uint32_t next = mf_live_get(&b->live, id)->next;
        end_block(b, id, mf_live_hash_of(&b->live, id), MF_BLOCK_PROCESS_ENDED, time_ns);
        id = next;
        any = 1;
    }
    if (!any || !b->counting)
        return b->oom ? -1 : any;
    for (size_t slot = 0; slot < n_view_of; slot++)
        if (view_of[slot])
            add_points(b, b->devs[slot], b->views[view_of[slot] - 1], time_ns);
    return b->oom ? -1 : 1;
}

int mf_blocks_on_sample(mf_blocks *b, const mf_event *e, uint32_t view,
                        const mf_sample_values *values)
{
    mf_blocks_view *v = b->views[view];
    mf_blocks_device *d = b->devs[v->slot];
    if (!b->counting)
        return 0;
    mf_snapshot s = { .time_ns = e->time_ns, .events_live = d->counts.held_bytes };
    memcpy(s.value, values->value, sizeof s.value);
    if (mf_snapshots_add(&d->snapshots, &s) < 0)
        b->oom = 1;
    s.events_live = v->counts.held_bytes;
    if (mf_snapshots_add(&v->snapshots, &s) < 0)
        b->oom = 1;
    return b->oom ? -1 : 0;
}

uint16_t mf_blocks_gpu_block_device(const mf_blocks *b, uint16_t log, uint64_t addr,
                                    uint16_t fallback)
{
    for (size_t i = 0; i < b->n_devs; i++) {
        uint16_t dev = b->devs[i]->device;
        if (MF_DEVICE_KIND(dev) == MF_DEVICE_GPU &&
            (mf_live_find(&b->live, log, dev, 0, addr) ||
             mf_live_find(&b->live, log, dev, MF_FLAG_EXPLICIT, addr)))
            return dev;
    }
    return fallback;
}

int mf_blocks_alloc_time(const mf_blocks *b, uint16_t log, uint16_t device, uint64_t addr,
                         uint64_t *alloc_ns)
{
    uint32_t id = mf_live_find(&b->live, log, device, 0, addr);
    if (!id)
        return 0;
    *alloc_ns = mf_live_get(&b->live, id)->alloc_ns;
    return 1;
}

uint64_t mf_blocks_view_epoch(const mf_blocks *b, uint32_t view)
{
    return b->views[view]->epoch;
}

int mf_blocks_each_live(const mf_blocks *b, uint16_t log, uint32_t view, uint16_t device,
                        int (*fn)(const mf_block *blk, void *ctx), void *ctx)
{
    for (uint32_t id = mf_live_first(&b->live, log); id;) {
        const mf_live *e = mf_live_get(&b->live, id);
        id = e->next;
        if (e->view != view || e->device != device)
            continue;
        mf_block blk;
        live_block(b, e, &blk);
        int rc = fn(&blk, ctx);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- settling ------------------------------------------------------------------- */

/* The stacks that held bytes at the device's peak, by stack id. */
static int settle_peak_stacks(mf_blocks_device *d, mf_device_model *out)
{
    free(d->stacks_out);
    size_t n = 0;
    uint64_t bytes, count;
    for (size_t i = 0; i < d->n_stacks; i++) {
        mf_scope_held_at_peak(&d->stacks[i], d->epoch, &bytes, &count);
        n += count != 0;
    }
    d->stacks_out = malloc((n ? n : 1) * sizeof *d->stacks_out);
    if (!d->stacks_out)
        return -1;
    n = 0;
    for (size_t i = 0; d->counts.peak_bytes && i < d->n_stacks; i++) {
        mf_scope_held_at_peak(&d->stacks[i], d->epoch, &bytes, &count);
        if (count)
            d->stacks_out[n++] = (mf_stack_share){ (uint32_t)i, bytes, count };
    }
    out->peak_stacks = d->stacks_out;
    out->n_peak_stacks = n;
    return 0;
}

int mf_blocks_settle_device(mf_blocks *b, uint32_t slot, mf_device_model *out)
{
    mf_blocks_device *d = b->devs[slot];
    out->counts = d->counts;
    out->use_min_bytes = d->use_min_bytes;
    out->use_sum_bytes = d->use_sum_bytes;
    memcpy(out->kinds, d->kinds, sizeof out->kinds);
    out->occupancy = mf_series_points(&d->occupancy, &out->n_occupancy);
    out->occupancy_points = d->occupancy.added;
    out->snapshots = mf_snapshots_items(&d->snapshots, &out->n_snapshots);
    out->snapshots_added = d->snapshots.added;
    free(d->scopes_out);
    free(d->sites_out);
    d->sites_out = NULL;
    out->sites = NULL;
    out->n_sites = 0;
    if (!(out->scopes = d->scopes_out = mf_keyed_settle(&d->scopes, d->epoch,
                                                          d->counts.peak_bytes)))
        return -1;
    out->n_scopes = d->scopes.n;
    out->peak_stacks = d->stacks_out;
    free(d->roles_out);
    free(d->names_out);
    d->names_out = NULL;
    if (!(out->roles = d->roles_out = mf_keyed_settle(&d->roles, d->epoch,
                                                        d->counts.peak_bytes)) ||
        !(out->names = d->names_out = mf_keyed_settle(&d->names, d->epoch,
                                                        d->counts.peak_bytes)))
        return -1;
    out->n_roles = d->roles.n;
    out->n_names = d->names.n;
    free(d->exit_out);
    if (!(out->held_at_exit = d->exit_out = mf_keyed_settle(&d->exit_held, d->epoch, 0)))
        return -1;
    out->n_held_at_exit = d->exit_held.n;
    out->steps = d->steps.items;
    out->n_steps = d->steps.n;
    out->steps_dropped = d->steps.dropped;
    if (b->sites) {
        if (!(out->sites = d->sites_out = mf_keyed_settle(&d->sites, d->epoch,
                                                            d->counts.peak_bytes)) ||
            settle_peak_stacks(d, out) < 0)
            return -1;
        out->n_sites = d->sites.n;
    }
    out->live_bytes_end = d->unfreed_bytes + d->counts.held_bytes;
    out->live_count_end = d->unfreed_count + d->counts.held_count;
    if (out->min_addr == UINT64_MAX)
        out->min_addr = 0;
    if (out->alloc_count == 0)
        out->min_size = 0;
    return 0;
}

int mf_blocks_settle_view(mf_blocks *b, uint32_t view, mf_view *out)
{
    mf_blocks_view *v = b->views[view];
    out->counts = v->counts;
    out->occupancy = mf_series_points(&v->occupancy, &out->n_occupancy);
    out->occupancy_points = v->occupancy.added;
    out->snapshots = mf_snapshots_items(&v->snapshots, &out->n_snapshots);
    out->live_bytes_end = v->unfreed_bytes + v->counts.held_bytes;
    out->live_count_end = v->unfreed_count + v->counts.held_count;
    out->live_blocks = v->counts.held_count;
    if (out->min_addr == UINT64_MAX)
        out->min_addr = 0;
    return 0;
}

/* The largest blocks never freed: those that ended with their process, and
 * those live now. */
static int settle_leaks(mf_blocks *b, mf_model *out)
{
    mf_topk all;
    mf_topk_init(&all, sizeof(mf_block), MF_MODEL_LEAKS, 0, by_requested_worse, NULL,
                 requested_key);
    for (size_t i = 0; i < b->leaks.n; i++)
        if (mf_topk_offer(&all, mf_topk_item(&b->leaks, i), NULL) < 0)
            return -1;
    for (size_t log = 0; log < b->live.n_logs; log++)
        for (uint32_t id = mf_live_first(&b->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&b->live, id);
            mf_block blk;
            live_block(b, e, &blk);
            if (mf_topk_offer(&all, &blk, NULL) < 0)
                return -1;
            id = e->next;
        }
    free(b->leaks_out);
    out->leaks = b->leaks_out = malloc((all.n ? all.n : 1) * sizeof *b->leaks_out);
    int rc = b->leaks_out ? mf_topk_sorted(&all, b->leaks_out) : -1;
    out->n_leaks = rc == 0 ? all.n : 0;
    mf_topk_free(&all);
    return rc;
}

/* Every GPU block never freed (MXNet's CSV lists them per process). */
static int settle_gpu(mf_blocks *b, size_t n_logs, mf_model *out)
{
    size_t n = 0, cap = 0;
    mf_block *all = NULL;
    for (size_t log = 0; log < n_logs; log++) {
        const mf_blocks_process *p = log < b->n_procs ? &b->procs[log] : NULL;
        for (size_t i = 0; p && i < p->n_gpu_unfreed; i++) {
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            all[n++] = p->gpu_unfreed[i];
        }
        for (uint32_t id = mf_live_first(&b->live, (uint16_t)log); id;) {
            const mf_live *e = mf_live_get(&b->live, id);
            id = e->next;
            if (MF_DEVICE_KIND(e->device) != MF_DEVICE_GPU)
                continue;
            if (mf_grow((void **)&all, &cap, n + 1, sizeof *all) < 0)
                goto oom;
            live_block(b, e, &all[n++]);
        }
    }
    free(b->gpu_out);
    out->gpu_live = b->gpu_out = all;
    out->n_gpu_live = n;
    return 0;
oom:
    free(all);
    return -1;
}

int mf_blocks_settle(mf_blocks *b, mf_model *out)
{
    out->step_marks = b->marks;
    out->n_step_marks = b->n_marks;
    return settle_leaks(b, out) < 0 || settle_gpu(b, out->n_processes, out) < 0 ? -1 : 0;
}

void mf_blocks_free(mf_blocks *b)
{
    for (size_t i = 0; i < b->n_devs; i++) {
        mf_blocks_device *d = b->devs[i];
        mf_series_free(&d->occupancy);
        mf_snapshots_free(&d->snapshots);
        mf_keyed_free(&d->scopes);
        mf_keyed_free(&d->sites);
        free(d->stacks);
        mf_keyed_free(&d->roles);
        mf_keyed_free(&d->names);
        free(d->roles_out);
        free(d->names_out);
        mf_keyed_free(&d->exit_held);
        free(d->exit_out);
        mf_steps_free(&d->steps);
        free(d->scopes_out);
        free(d->sites_out);
        free(d->stacks_out);
        free(d);
    }
    free(b->devs);
    for (size_t i = 0; i < b->n_views; i++) {
        mf_series_free(&b->views[i]->occupancy);
        mf_snapshots_free(&b->views[i]->snapshots);
        free(b->views[i]);
    }
    free(b->views);
    for (size_t i = 0; i < b->n_procs; i++)
        free(b->procs[i].gpu_unfreed);
    free(b->procs);
    mf_live_free(&b->live);
    free(b->marks);
    mf_topk_free(&b->leaks);
    free(b->leaks_out);
    free(b->gpu_out);
    memset(b, 0, sizeof *b);
}
