/*
 * index_cells.c - the view index's picture (index.h): a sweep over time of
 * the bytes each view holds per address granule, in all, by scope and by
 * role.  A block's start and end (and a change of its role) change the
 * bytes of the granules it covers (O(granules), usually one or two);
 * between changes a granule's bytes x ns grow by its bytes times the
 * time passed, so the cost follows the events and the cells written, never
 * a block's length.  When time passes a column of the cell level, its
 * granules become cells (written as one piece), and the column merges
 * into the open column of the next level, which is written in turn when
 * time passes it.  Columns in which nothing changed are alike: a run of
 * them is one piece with a column range, at every level.  A view that
 * holds more than MF_INDEX_ROWS granules at once doubles its granule
 * (pieces already written keep theirs: each says its granule).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "index_state.h"

static unsigned col_shift(const mf_index *ix, int level)
{
    return ix->wshift + (unsigned)level;
}

static size_t hash_granule(uint64_t g, size_t mask)
{
    return (size_t)((g * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

/* Slots (index + 1 by granule hash) for n items of size bytes whose first
 * field is their granule (ix_grain, ix_cell); NULL when out of memory. */
static uint32_t *slots_of(const void *items, size_t n, size_t size, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    for (size_t i = 0; slots && i < n; i++) {
        uint64_t g;
        memcpy(&g, (const char *)items + i * size, sizeof g);
        size_t h = hash_granule(g, n_slots - 1);
        while (slots[h])
            h = (h + 1) & (n_slots - 1);
        slots[h] = (uint32_t)i + 1;
    }
    return slots;
}

/* ---- granules held now ------------------------------------------------------------ */

static int grains_rehash(ix_view *v, size_t n_slots)
{
    uint32_t *slots = slots_of(v->g, v->n_g, sizeof *v->g, n_slots);
    if (!slots)
        return -1;
    free(v->gslots);
    v->gslots = slots;
    v->n_gslots = n_slots;
    return 0;
}

/* The grain of granule g (made, counted from t, when add); NULL: none or out of memory. */
static ix_grain *grain(mf_index *ix, ix_view *v, uint64_t g, uint64_t t, int add)
{
    if (v->n_gslots) {
        size_t mask = v->n_gslots - 1;
        for (size_t h = hash_granule(g, mask); v->gslots[h]; h = (h + 1) & mask)
            if (v->g[v->gslots[h] - 1].granule == g)
                return &v->g[v->gslots[h] - 1];
    }
    if (!add)
        return NULL;
    if ((v->n_g + 1) * 2 > v->n_gslots &&
        grains_rehash(v, v->n_gslots ? v->n_gslots * 2 : 64) < 0)
        goto oom;
    if (mf_grow((void **)&v->g, &v->cap_g, v->n_g + 1, sizeof *v->g) < 0)
        goto oom;
    size_t mask = v->n_gslots - 1, h = hash_granule(g, mask);
    while (v->gslots[h])
        h = (h + 1) & mask;
    ix_grain *x = &v->g[v->n_g];
    memset(x, 0, sizeof *x);
    x->granule = g;
    x->last_ns = t;
    v->gslots[h] = (uint32_t)++v->n_g;
    return x;
oom:
    ix->failed = 1;
    return NULL;
}

/* Count x's bytes x ns up to t. */
static void grain_until(ix_grain *x, uint64_t t)
{
    if (t <= x->last_ns)
        return;
    double dt = (double)(t - x->last_ns);
    x->amount += (double)x->bytes * dt;
    for (int s = 0; s < IX_SLOTS; s++)
        x->samount[s] += (double)x->sbytes[s] * dt;
    for (int r = 0; r < MF_ROLES; r++)
        x->ramount[r] += (double)x->rbytes[r] * dt;
    x->last_ns = t;
}

/* bytes of scope come (sign 1) or go (sign -1) in x. */
static void grain_scope(ix_grain *x, uint32_t scope, uint64_t bytes, int sign)
{
    int s, weakest = 0;
    for (s = 0; s < IX_SLOTS; s++)
        if (x->scope[s] == scope && (x->sbytes[s] || x->samount[s] > 0))
            break;
    if (s == IX_SLOTS) {
        if (sign < 0)
            return;
        for (s = 0; s < IX_SLOTS; s++) {
            if (!x->sbytes[s] && x->samount[s] <= 0)
                break;
            if (x->sbytes[s] < x->sbytes[weakest])
                weakest = s;
        }
        if (s == IX_SLOTS) {                    /* the one holding least makes room */
            s = weakest;
            x->sbytes[s] = 0;
            x->samount[s] = 0;
        }
        x->scope[s] = scope;
    }
    if (sign > 0)
        x->sbytes[s] += bytes;
    else
        x->sbytes[s] -= bytes < x->sbytes[s] ? bytes : x->sbytes[s];
}

/* Of n keys (scopes, roles), the one that held the most bytes x ns in the
 * open column, or holds the most bytes now at a tie. */
static int heaviest(const double *amount, const uint64_t *bytes, int n)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (amount[k] > amount[best] || (amount[k] == amount[best] && bytes[k] > bytes[best]))
            best = k;
    return best;
}

/* Of n keys, the one that holds the most bytes now. */
static int largest(const uint64_t *bytes, int n)
{
    int best = 0;
    for (int k = 1; k < n; k++)
        if (bytes[k] > bytes[best])
            best = k;
    return best;
}

/* The slot whose scope held the most in the open column (or holds the most now). */
static int grain_top(const ix_grain *x)
{
    return heaviest(x->samount, x->sbytes, IX_SLOTS);
}

/* The role that held the most in the open column (or holds the most now). */
static int grain_top_role(const ix_grain *x)
{
    return heaviest(x->ramount, x->rbytes, MF_ROLES);
}

/* The cell of grain x over the open column: its amounts, its top scope and role. */
static ix_cell grain_cell(const ix_grain *x)
{
    int s = grain_top(x), r = grain_top_role(x);
    return (ix_cell){ .granule = x->granule, .amount = x->amount, .top = x->samount[s],
                      .scope = x->scope[s], .rtop = x->ramount[r], .role = (uint8_t)r };
}

/* ---- cells by granule ---------------------------------------------------------------- */

static ix_cell *cells_at(mf_index *ix, ix_cells *c, uint64_t g)
{
    if ((c->n + 1) * 2 > c->n_slots) {
        size_t n = c->n_slots ? c->n_slots * 2 : 64;
        uint32_t *slots = slots_of(c->c, c->n, sizeof *c->c, n);
        if (!slots) {
            ix->failed = 1;
            return NULL;
        }
        free(c->slots);
        c->slots = slots;
        c->n_slots = n;
    }
    size_t mask = c->n_slots - 1, h = hash_granule(g, mask);
    for (; c->slots[h]; h = (h + 1) & mask)
        if (c->c[c->slots[h] - 1].granule == g)
            return &c->c[c->slots[h] - 1];
    if (mf_grow((void **)&c->c, &c->cap, c->n + 1, sizeof *c->c) < 0) {
        ix->failed = 1;
        return NULL;
    }
    c->c[c->n] = (ix_cell){ .granule = g };
    c->slots[h] = (uint32_t)++c->n;
    return &c->c[c->n - 1];
}

/* Cell c, weight times, into x: its amount, and its scope and role where
 * they are x's or outweigh them. */
static void cell_add(ix_cell *x, const ix_cell *c, double weight)
{
    double top = c->top * weight, rtop = c->rtop * weight;
    x->amount += c->amount * weight;
    if (x->scope == c->scope)
        x->top += top;
    else if (top > x->top) {
        x->scope = c->scope;
        x->top = top;
    }
    if (x->role == c->role)
        x->rtop += rtop;
    else if (rtop > x->rtop) {
        x->role = c->role;
        x->rtop = rtop;
    }
}

static void cells_clear(ix_cells *c)
{
    c->n = 0;
    if (c->n_slots)
        memset(c->slots, 0, c->n_slots * sizeof *c->slots);
}

static void cells_free(ix_cells *c)
{
    free(c->c);
    free(c->slots);
    memset(c, 0, sizeof *c);
}

/* ---- writing columns and merging them upward --------------------------------------------- */

static void feed_up(mf_index *ix, ix_view *v, int l, uint64_t c0, uint64_t c1,
                    const ix_cell *cells, size_t n);

/* Write columns [c0, c1] of level l, each holding cells[0..n), and merge
 * them into level l + 1. */
static void emit(mf_index *ix, ix_view *v, int l, uint64_t c0, uint64_t c1, const ix_cell *cells,
                 size_t n)
{
    if (!n)
        return;
    double area = ldexp(1.0, (int)(col_shift(ix, l) + v->gshift));
    ix_out o = { .p = ix->buf, .cap = ix->cap_buf };
    ix_put_var(&o, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        double f = cells[i].amount / area;
        unsigned q = f >= 1 ? 255 : (unsigned)ceil(f * 255);
        ix_put_var(&o, ix_zig((int64_t)(cells[i].granule - prev)));
        ix_put_u8(&o, q ? q : 1);
        ix_put_var(&o, (uint64_t)cells[i].scope << 3 | (cells[i].role & MF_ROLE_MASK));
        prev = cells[i].granule;
    }
    ix->buf = o.p;
    ix->cap_buf = o.cap;
    uint64_t off;
    if (o.bad || ix_write(ix, o.p, o.n, &off) < 0 ||
        !ix_dir_add(&v->levels[l].cell_dir, c0, off, o.n, n, (c1 - c0) << 8 | v->gshift))
        ix->failed = 1;
    if (l + 1 < MF_INDEX_LEVELS)
        feed_up(ix, v, l + 1, c0, c1, cells, n);
}

/* Write level l's open column. */
static void close_open(mf_index *ix, ix_view *v, int l)
{
    ix_level *L = &v->levels[l];
    if (L->col == IX_NONE)
        return;
    uint64_t col = L->col;
    L->col = IX_NONE;
    emit(ix, v, l, col, col, L->open.c, L->open.n);
    cells_clear(&L->open);      /* emitting touches levels above l only */
}

/* Add cells, weight times, to level l's open column col. */
static void add_open(mf_index *ix, ix_view *v, int l, uint64_t col, const ix_cell *cells,
                     size_t n, uint64_t weight)
{
    ix_level *L = &v->levels[l];
    if (L->col != IX_NONE && L->col != col)
        close_open(ix, v, l);
    L->col = col;
    for (size_t i = 0; i < n; i++) {
        ix_cell *x = cells_at(ix, &L->open, cells[i].granule);
        if (x)
            cell_add(x, &cells[i], (double)weight);
    }
    if (L->open.n > 4 * MF_INDEX_ROWS)
        v->rebase_due = 1;          /* settle() doubles the granule, between changes */
}

/* Columns [c0, c1] of level l - 1, alike, into level l. */
static void feed_up(mf_index *ix, ix_view *v, int l, uint64_t c0, uint64_t c1,
                    const ix_cell *cells, size_t n)
{
    uint64_t p0 = c0 >> 1, p1 = c1 >> 1;
    if (p0 == p1) {
        add_open(ix, v, l, p0, cells, n, c1 - c0 + 1);
        return;
    }
    add_open(ix, v, l, p0, cells, n, 2 * p0 + 2 - c0);
    close_open(ix, v, l);
    if (p1 > p0 + 1) {                  /* whole parents: twice the cells each */
        ix_cell *two = malloc(n * sizeof *two);
        if (!two) {
            ix->failed = 1;
            return;
        }
        for (size_t i = 0; i < n; i++) {
            two[i] = cells[i];
            two[i].amount *= 2;
            two[i].top *= 2;
            two[i].rtop *= 2;
        }
        emit(ix, v, l, p0 + 1, p1 - 1, two, n);
        free(two);
    }
    add_open(ix, v, l, p1, cells, n, c1 - 2 * p1 + 1);
}

/* ---- the sweep at the cell level ------------------------------------------------------------ */

static void settle(mf_index *ix, ix_view *v);

static ix_cell *scratch(mf_index *ix, ix_view *v, size_t n)
{
    if (mf_grow((void **)&v->scratch, &v->cap_scratch, n ? n : 1, sizeof *v->scratch) < 0) {
        ix->failed = 1;
        return NULL;
    }
    return v->scratch;
}

/* Close the open column: its grains become cells; grains holding nothing go. */
static void close_column(mf_index *ix, ix_view *v)
{
    int l = ix->cell_level;
    uint64_t end = ix->t0 + ((v->col + 1) << col_shift(ix, l));
    ix_cell *out = scratch(ix, v, v->n_g);
    if (!out)
        return;
    size_t n = 0, kept = 0;
    for (size_t i = 0; i < v->n_g; i++) {
        ix_grain *x = &v->g[i];
        grain_until(x, end);
        if (x->amount > 0)
            out[n++] = grain_cell(x);
        if (!x->bytes)
            continue;
        x->amount = 0;
        for (int s = 0; s < IX_SLOTS; s++)
            x->samount[s] = 0;
        for (int r = 0; r < MF_ROLES; r++)
            x->ramount[r] = 0;
        v->g[kept++] = *x;
    }
    if (kept != v->n_g) {
        v->n_g = kept;
        if (grains_rehash(v, v->n_gslots) < 0)
            ix->failed = 1;
    }
    emit(ix, v, l, v->col, v->col, out, n);
}

/* Columns [c0, c1] of the cell level, in which nothing changed. */
static void quiet_columns(mf_index *ix, ix_view *v, uint64_t c0, uint64_t c1)
{
    int l = ix->cell_level;
    double ns = ldexp(1.0, (int)col_shift(ix, l));
    ix_cell *out = scratch(ix, v, v->n_g);
    if (!out || !v->n_g)
        return;
    for (size_t i = 0; i < v->n_g; i++) {
        const ix_grain *x = &v->g[i];
        int top = largest(x->sbytes, IX_SLOTS), role = largest(x->rbytes, MF_ROLES);
        out[i] = (ix_cell){ .granule = x->granule, .amount = (double)x->bytes * ns,
                            .top = (double)x->sbytes[top] * ns, .scope = x->scope[top],
                            .rtop = (double)x->rbytes[role] * ns, .role = (uint8_t)role };
    }
    emit(ix, v, l, c0, c1, out, v->n_g);
}

void ix_cells_advance(mf_index *ix, ix_view *v, uint64_t t)
{
    uint64_t col = ix_rel(ix, t) >> col_shift(ix, ix->cell_level);
    if (v->col == IX_NONE) {
        v->col = col;
        return;
    }
    if (col <= v->col)
        return;
    close_column(ix, v);
    if (col > v->col + 1)
        quiet_columns(ix, v, v->col + 1, col - 1);
    uint64_t start = ix->t0 + (col << col_shift(ix, ix->cell_level));
    for (size_t i = 0; i < v->n_g; i++)
        v->g[i].last_ns = start;
    v->col = col;
    settle(ix, v);
}

/* Merge slot-wise what b holds into a (granules joined by a rebase). */
static void grain_join(ix_grain *a, const ix_grain *b)
{
    a->bytes += b->bytes;
    a->amount += b->amount;
    for (int r = 0; r < MF_ROLES; r++) {
        a->rbytes[r] += b->rbytes[r];
        a->ramount[r] += b->ramount[r];
    }
    for (int s = 0; s < IX_SLOTS; s++) {
        if (!b->sbytes[s] && b->samount[s] <= 0)
            continue;
        int k;
        for (k = 0; k < IX_SLOTS; k++)
            if (a->scope[k] == b->scope[s] && (a->sbytes[k] || a->samount[k] > 0))
                break;
        if (k == IX_SLOTS) {
            int weakest = 0;
            for (k = 0; k < IX_SLOTS; k++) {
                if (!a->sbytes[k] && a->samount[k] <= 0)
                    break;
                if (a->samount[k] < a->samount[weakest])
                    weakest = k;
            }
            if (k == IX_SLOTS) {
                if (a->samount[weakest] >= b->samount[s])
                    continue;
                k = weakest;
                a->sbytes[k] = 0;
                a->samount[k] = 0;
            }
            a->scope[k] = b->scope[s];
        }
        a->sbytes[k] += b->sbytes[s];
        a->samount[k] += b->samount[s];
    }
}

/* Double the view's granule: grains and open columns join pairwise. */
static void rebase(mf_index *ix, ix_view *v)
{
    v->gshift++;
    size_t n = v->n_g;
    ix_grain *old = v->g;
    uint64_t upto = 0;                  /* joined grains are counted to the same time */
    for (size_t i = 0; i < n; i++)
        upto = old[i].last_ns > upto ? old[i].last_ns : upto;
    v->g = NULL;
    v->n_g = v->cap_g = 0;
    free(v->gslots);
    v->gslots = NULL;
    v->n_gslots = 0;
    for (size_t i = 0; i < n; i++) {
        grain_until(&old[i], upto);
        ix_grain *x = grain(ix, v, old[i].granule >> 1, upto, 1);
        if (x)
            grain_join(x, &old[i]);
    }
    free(old);
    for (int l = ix->cell_level + 1; l < MF_INDEX_LEVELS; l++) {
        ix_cells *c = &v->levels[l].open;
        if (!c->n)
            continue;
        ix_cell *cells = c->c;
        size_t k = c->n;
        *c = (ix_cells){ 0 };
        for (size_t i = 0; i < k; i++) {
            ix_cell *x = cells_at(ix, c, cells[i].granule >> 1);
            if (x)
                cell_add(x, &cells[i], 1);
        }
        free(cells);
    }
}

/* Between changes (never while columns are written: what is written says
 * its granule): double the granule while the view holds too many. */
static void settle(mf_index *ix, ix_view *v)
{
    while ((v->n_g > MF_INDEX_ROWS || v->rebase_due) && v->gshift < 63) {
        v->rebase_due = 0;
        rebase(ix, v);
        for (int l = ix->cell_level + 1; l < MF_INDEX_LEVELS; l++)
            if (v->levels[l].open.n > 4 * MF_INDEX_ROWS)
                v->rebase_due = 1;
    }
}

/* Bytes of role come (sign 1) or go (sign -1) in x. */
static void grain_role(ix_grain *x, unsigned role, uint64_t bytes, int sign)
{
    uint64_t *r = &x->rbytes[role & MF_ROLE_MASK];
    if (sign > 0)
        *r += bytes;
    else
        *r -= bytes < *r ? bytes : *r;
}

/* fn(ctx, grain, bytes of b in it) for each granule b covers, counted up
 * to t (made when add; one not there is left out). */
static void each_grain(mf_index *ix, ix_view *v, const mf_index_block *b, uint64_t t, int add,
                       void (*fn)(void *ctx, ix_grain *x, uint64_t bytes), void *ctx)
{
    uint64_t span = ix_span(b), last = b->addr + span - 1;
    if (last < b->addr)
        last = UINT64_MAX;
    while (add && (last >> v->gshift) - (b->addr >> v->gshift) >= MF_INDEX_ROWS &&
           v->gshift < 63)
        rebase(ix, v);
    for (uint64_t g = b->addr >> v->gshift; g <= last >> v->gshift; g++) {
        uint64_t g0 = g << v->gshift, g1 = g0 + ((1ull << v->gshift) - 1);
        uint64_t bytes = (last < g1 ? last : g1) - (b->addr > g0 ? b->addr : g0) + 1;
        ix_grain *x = grain(ix, v, g, t, add);
        if (x) {
            grain_until(x, t);
            fn(ctx, x, bytes);
        }
        if (g == UINT64_MAX >> v->gshift)
            break;
    }
}

typedef struct change {
    const mf_index_block *b;
    int sign;
} change;

static void grain_change(void *ctx, ix_grain *x, uint64_t bytes)
{
    const change *c = ctx;
    if (c->sign > 0)
        x->bytes += bytes;
    else
        x->bytes -= bytes < x->bytes ? bytes : x->bytes;
    grain_scope(x, c->b->scope, bytes, c->sign);
    grain_role(x, c->b->role, bytes, c->sign);
}

void ix_cells_change(mf_index *ix, ix_view *v, uint64_t t, const mf_index_block *b, int sign)
{
    change c = { b, sign };
    each_grain(ix, v, b, t, sign > 0, grain_change, &c);
    settle(ix, v);
}

typedef struct role_change {
    unsigned from, to;
    uint64_t since;           /* b is counted in the open column since then */
    uint64_t t;
} role_change;

/* b's bytes in x change role, and so does what they held in the open column. */
static void grain_role_change(void *ctx, ix_grain *x, uint64_t bytes)
{
    const role_change *c = ctx;
    double moved = (double)bytes * (double)(c->t > c->since ? c->t - c->since : 0);
    grain_role(x, c->from, bytes, -1);
    grain_role(x, c->to, bytes, 1);
    moved = moved < x->ramount[c->from] ? moved : x->ramount[c->from];
    x->ramount[c->from] -= moved;
    x->ramount[c->to] += moved;
}

void ix_cells_role(mf_index *ix, ix_view *v, uint64_t t, const mf_index_block *b, unsigned from)
{
    uint64_t start = v->col == IX_NONE ? t : ix->t0 + (v->col << col_shift(ix, ix->cell_level));
    role_change c = { from & MF_ROLE_MASK, b->role & MF_ROLE_MASK,
                      b->alloc_ns > start ? b->alloc_ns : start, t };
    each_grain(ix, v, b, t, 0, grain_role_change, &c);
}

/* The logs are finished: the open column, then every level's, upward. */
void ix_cells_finish(mf_index *ix, ix_view *v)
{
    if (v->col != IX_NONE) {
        uint64_t end = ix->t0 + ((v->col + 1) << col_shift(ix, ix->cell_level));
        if (ix->t1 < end && v->n_g) {     /* the last column ends with the run */
            for (size_t i = 0; i < v->n_g; i++)
                grain_until(&v->g[i], ix->t1);
            for (size_t i = 0; i < v->n_g; i++) {
                v->g[i].bytes = 0;
                memset(v->g[i].sbytes, 0, sizeof v->g[i].sbytes);
                memset(v->g[i].rbytes, 0, sizeof v->g[i].rbytes);
            }
        }
        close_column(ix, v);
        v->col = IX_NONE;
    }
    for (int l = ix->cell_level + 1; l < MF_INDEX_LEVELS; l++)
        close_open(ix, v, l);
}

void ix_cells_free(ix_view *v)
{
    for (int l = 0; v->levels && l < MF_INDEX_LEVELS; l++)
        cells_free(&v->levels[l].open);
    free(v->g);
    free(v->gslots);
    free(v->scratch);
}

/* ---- what queries read ------------------------------------------------------------------------ */

/* One cell to fn, clipped to nothing: the caller clips. */
static int give(int (*fn)(void *, const mf_index_cell *), void *ctx, uint64_t t_from,
                uint64_t t_to, unsigned gshift, uint64_t granule, double fill, uint32_t scope,
                unsigned role)
{
    mf_index_cell c = { .t_from = t_from, .t_to = t_to, .addr = granule << gshift,
                        .bytes = 1ull << gshift, .fill = fill > 1 ? 1 : fill, .scope = scope,
                        .role = (uint8_t)role };
    return fn(ctx, &c);
}

int ix_decode_cells(mf_index *ix, const ix_dirent *e, int level, uint64_t t_from,
                    uint64_t t_to, int (*fn)(void *ctx, const mf_index_cell *c), void *ctx,
                    char *err, size_t errlen)
{
    ix_in in;
    if (ix_read_piece(ix, e, &in, err, errlen) < 0)
        return -1;
    unsigned ws = col_shift(ix, level), gs = (unsigned)(e->aux & 0xff);
    uint64_t c0 = e->key, c1 = e->key + (e->aux >> 8);
    uint64_t from = ix_rel(ix, t_from) >> ws, to = ix_rel(ix, t_to) >> ws;
    c0 = c0 < from ? from : c0;
    c1 = c1 > to ? to : c1;
    if (gs > 63 || c0 > c1)
        return 0;
    uint64_t n = ix_get_var(&in), g = 0;
    for (uint64_t i = 0; i < n && !in.bad; i++) {
        g += (uint64_t)ix_unzig(ix_get_var(&in));
        unsigned q = ix_get_u8(&in);
        uint64_t key = ix_get_var(&in);
        if (in.bad || (key >> 3) > UINT32_MAX) {
            in.bad = 1;
            break;
        }
        int rc = give(fn, ctx, ix->t0 + (c0 << ws), ix->t0 + ((c1 + 1) << ws), gs, g,
                      q / 255.0, (uint32_t)(key >> 3), (unsigned)(key & MF_ROLE_MASK));
        if (rc)
            return rc;
    }
    if (in.bad || in.at != in.n) {
        snprintf(err, errlen, "%s: a column of cells at offset %llu is damaged", ix->path,
                 (unsigned long long)e->offset);
        return -1;
    }
    return 0;
}

/* While the logs are written: the open columns of the levels up to level,
 * and the granules of the sweep (each with what it held so far). */
int ix_cells_open(mf_index *ix, ix_view *v, int level, uint64_t t_from, uint64_t t_to,
                  int (*fn)(void *ctx, const mf_index_cell *c), void *ctx)
{
    for (int l = ix->cell_level + 1; l <= level && l < MF_INDEX_LEVELS; l++) {
        const ix_level *L = &v->levels[l];
        unsigned ws = col_shift(ix, l);
        if (L->col == IX_NONE)
            continue;
        uint64_t a = ix->t0 + (L->col << ws), b = ix->t0 + ((L->col + 1) << ws);
        if (b <= t_from || a > t_to)
            continue;
        double area = ldexp(1.0, (int)(ws + v->gshift));
        for (size_t i = 0; i < L->open.n; i++) {
            int rc = give(fn, ctx, a, b, v->gshift, L->open.c[i].granule,
                          L->open.c[i].amount / area, L->open.c[i].scope, L->open.c[i].role);
            if (rc)
                return rc;
        }
    }
    if (v->col == IX_NONE)
        return 0;
    unsigned ws = col_shift(ix, ix->cell_level);
    uint64_t a = ix->t0 + (v->col << ws), b = ix->now > a ? ix->now : a + 1;
    if (b <= t_from || a > t_to)
        return 0;
    for (size_t i = 0; i < v->n_g; i++) {
        const ix_grain *x = &v->g[i];
        if (!x->bytes && x->amount <= 0)
            continue;
        double held = x->amount + (double)x->bytes * (double)(b - x->last_ns);
        int rc = give(fn, ctx, a, b, v->gshift, x->granule,
                      held / ((double)(b - a) * ldexp(1.0, (int)v->gshift)),
                      x->scope[grain_top(x)], (unsigned)grain_top_role(x));
        if (rc)
            return rc;
    }
    return 0;
}
