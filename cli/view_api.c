/*
 * view_api.c - `memflow view`'s data answers (view_api.h): the views,
 * their legends of scopes and roles and their OOMs (meta), the cells and
 * blocks of a window (keyed by scope, or by role), the occupancy of a time
 * range, a block's whole stack, and for a selected range the flame
 * graph of what was live at its peak and the scopes and sites that grew.
 * Program strings go through the one JSON escaper (render/escape.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "model.h"
#include "sink.h"
#include "svg_color.h"
#include "view_api.h"
#include "view_raster.h"

typedef struct api {
    mf_index *ix;
    const mf_view_request *rq;
    mf_sink s;
    char err[512];
    size_t n_cells;
    int binary;               /* the answer is bytes (window), not JSON */
} api;

static void str(mf_sink *s, const char *text)
{
    mf_sink_putc(s, '"');
    mf_escape_json(s, text ? text : "");
    mf_sink_putc(s, '"');
}

static uint64_t rel(const api *a, uint64_t t)
{
    uint64_t t0 = mf_index_t0(a->ix);
    return t > t0 ? t - t0 : 0;
}

static uint64_t abs_time(const api *a, uint64_t t)
{
    uint64_t t0 = mf_index_t0(a->ix);
    return t > UINT64_MAX - t0 ? UINT64_MAX : t0 + t;
}

static const char *site_name(api *a, uint32_t stack)
{
    mf_sites *sites = mf_index_sites(a->ix);
    if (!sites)
        return NULL;
    const mf_site *site = mf_sites_get(sites, mf_sites_of_stack(sites, stack));
    return site ? site->name : NULL;
}

static uint64_t ix_end(const api *a, const mf_index_block *b)
{
    if (b->free_ns != MF_LIVE_AT_END)
        return b->free_ns;
    uint64_t t1 = mf_index_t1(a->ix);
    return t1 > b->alloc_ns ? t1 : b->alloc_ns + 1;
}

static const char *string(const api *a, uint32_t id)
{
    return mf_strings_get(mf_index_strings(a->ix), id);
}

/* One block as JSON: times since t0, "free" null while live at the end. */
static void block_json(api *a, const mf_index_block *b)
{
    mf_sink *s = &a->s;
    mf_sink_printf(s, "{\"addr\":%llu,\"requested\":%llu,\"actual\":%llu,\"alloc\":%llu,",
                   (unsigned long long)b->addr, (unsigned long long)b->requested,
                   (unsigned long long)b->actual, (unsigned long long)rel(a, b->alloc_ns));
    if (b->free_ns == MF_LIVE_AT_END)
        mf_sink_puts(s, "\"free\":null,");
    else
        mf_sink_printf(s, "\"free\":%llu,", (unsigned long long)rel(a, b->free_ns));
    mf_sink_printf(s, "\"scope\":%u,\"tid\":%u,\"stack\":%u,\"end\":%u,\"level\":%u,\"role\":\"%s\","
                   "\"name\":", b->scope, b->tid, b->stack, b->end, b->level, mf_role_name(b->role));
    str(s, b->name ? string(a, b->name) : "");
    const char *site = b->stack ? site_name(a, b->stack) : NULL;
    mf_sink_puts(s, ",\"site\":");
    if (site)
        str(s, site);
    else
        mf_sink_puts(s, "null");
    mf_sink_putc(s, '}');
}

static int error_answer(mf_view_answer *out, int status, const char *msg)
{
    mf_sink s = { 0 };
    mf_sink_puts(&s, "{\"error\":");
    str(&s, msg);
    mf_sink_puts(&s, "}\n");
    out->status = status;
    out->len = s.len;
    out->body = mf_sink_take(&s);
    return out->body ? 0 : -1;
}

/* ---- meta ------------------------------------------------------------------------------ */

static void color_json(mf_sink *s, mf_svg_rgb c)
{
    mf_sink_printf(s, "\"color\":\"#%02x%02x%02x\"", c.r, c.g, c.b);
}

/* A number, or null when it is `none`. */
static void u64_or_null(mf_sink *s, uint64_t v, uint64_t none)
{
    if (v == none)
        mf_sink_puts(s, "null");
    else
        mf_sink_u64(s, v);
}

/* The view's roles that allocated, most bytes first. */
static void roles_json(api *a, const mf_index_view *v)
{
    unsigned order[MF_ROLES], n = 0;
    for (unsigned r = 0; r < MF_ROLES; r++) {
        unsigned k = n++;
        for (; k > 0 && v->role_bytes[order[k - 1]] < v->role_bytes[r]; k--)
            order[k] = order[k - 1];
        order[k] = r;
    }
    mf_sink_puts(&a->s, ",\"roles\":[");
    for (unsigned i = 0, shown = 0; i < n; i++) {
        unsigned r = order[i];
        if (!v->role_count[r])
            continue;
        mf_sink_printf(&a->s, "%s{\"id\":%u,\"name\":\"%s\",\"bytes\":%llu,\"count\":%llu,",
                       shown++ ? "," : "", r, mf_role_name(r),
                       (unsigned long long)v->role_bytes[r], (unsigned long long)v->role_count[r]);
        color_json(&a->s, mf_svg_role_color(r));
        mf_sink_putc(&a->s, '}');
    }
    mf_sink_putc(&a->s, ']');
}

/* The view's OOMs: what each asked, what the device had, what was live. */
static void ooms_json(api *a, const mf_index_view *v)
{
    mf_sink *s = &a->s;
    char dev[16];
    mf_model_device_name(v->device, dev, sizeof dev);
    mf_sink_printf(s, ",\"ooms_total\":%llu,\"ooms\":[", (unsigned long long)v->ooms_total);
    for (size_t i = 0; i < v->n_ooms; i++) {
        const mf_index_oom *o = &v->ooms[i];
        mf_sink_printf(s, "%s{\"time\":%llu,\"device\":\"%s\",\"requested\":%llu,\"free\":",
                       i ? "," : "", (unsigned long long)rel(a, o->time_ns), dev,
                       (unsigned long long)o->requested);
        u64_or_null(s, o->device_free, UINT64_MAX);
        mf_sink_puts(s, ",\"limit\":");
        u64_or_null(s, o->device_limit, 0);
        mf_sink_printf(s, ",\"route\":\"%s\",\"route_name\":", mf_oom_route_key(o->route));
        str(s, mf_oom_route_name(o->route));
        mf_sink_puts(s, ",\"scope\":");
        str(s, string(a, o->scope));
        mf_sink_printf(s, ",\"known\":%s,\"tensors\":%s,\"live_bytes\":%llu,"
                       "\"live_count\":%llu,\"top\":[", o->known ? "true" : "false",
                       o->tensors ? "true" : "false", (unsigned long long)o->live_bytes,
                       (unsigned long long)o->live_count);
        for (uint32_t k = 0; k < o->n_top; k++) {
            mf_sink_puts(s, k ? ",{\"scope\":" : "{\"scope\":");
            str(s, string(a, o->top[k].id));
            mf_sink_printf(s, ",\"bytes\":%llu,\"count\":%llu}",
                           (unsigned long long)o->top[k].bytes, (unsigned long long)o->top[k].count);
        }
        mf_sink_puts(s, "]}");
    }
    mf_sink_putc(s, ']');
}

static void view_json(api *a, size_t i)
{
    const mf_index_view *v = mf_index_view_at(a->ix, i);
    mf_sink *s = &a->s;
    char dev[16];
    mf_sink_printf(s, "%s{\"id\":%zu,\"device\":\"%s\",\"pid\":%u,\"program\":", i ? "," : "",
                   i, mf_model_device_name(v->device, dev, sizeof dev), v->pid);
    str(s, mf_index_program(a->ix, v->pid));
    mf_sink_printf(s, ",\"first\":%llu,\"last\":%llu,\"peak_bytes\":%llu,\"peak_time\":%llu,"
                   "\"held\":%llu,\"blocks\":%llu,\"min_addr\":%llu,\"max_addr\":%llu,\"leak\":",
                   (unsigned long long)rel(a, v->first_ns), (unsigned long long)rel(a, v->last_ns),
                   (unsigned long long)v->peak_bytes, (unsigned long long)rel(a, v->peak_ns),
                   (unsigned long long)v->held_bytes, (unsigned long long)v->blocks,
                   (unsigned long long)v->min_addr, (unsigned long long)v->max_addr);
    if (v->largest_leak.requested)
        block_json(a, &v->largest_leak);
    else
        mf_sink_puts(s, "null");
    mf_sink_puts(s, ",\"ranges\":[");
    for (size_t k = 0; k < v->ranges.n; k++)
        mf_sink_printf(s, "%s[%llu,%llu]", k ? "," : "", (unsigned long long)v->ranges.r[k].start,
                       (unsigned long long)v->ranges.r[k].end);
    mf_sink_puts(s, "],\"scopes\":[");
    for (size_t k = 0; k < v->n_scopes; k++) {
        const char *name = string(a, v->scopes[k].scope);
        mf_svg_rgb c = mf_svg_scope_color(name);
        mf_sink_printf(s, "%s{\"id\":%u,\"name\":", k ? "," : "", v->scopes[k].scope);
        str(s, name);
        mf_sink_printf(s, ",\"bytes\":%llu,\"count\":%llu,",
                       (unsigned long long)v->scopes[k].bytes,
                       (unsigned long long)v->scopes[k].count);
        color_json(s, c);
        mf_sink_putc(s, '}');
    }
    mf_sink_putc(s, ']');
    roles_json(a, v);
    ooms_json(a, v);
    mf_sink_putc(s, '}');
}

static void meta(api *a)
{
    mf_sink *s = &a->s;
    mf_sink_printf(s, "{\"t1\":%llu,\"wshift\":%u,\"cell_level\":%d,\"levels\":%d,"
                   "\"running\":%s,\"reused\":%s,\"blocks_max\":%d,\"index\":",
                   (unsigned long long)rel(a, mf_index_t1(a->ix)), mf_index_wshift(a->ix),
                   mf_index_cell_level(a->ix), MF_INDEX_LEVELS,
                   mf_index_running(a->ix) ? "true" : "false",
                   mf_index_reused(a->ix) ? "true" : "false", MF_VIEW_BLOCKS_MAX);
    str(s, mf_index_path(a->ix));
    mf_sink_puts(s, ",\"roles\":[");
    for (unsigned r = 0; r < MF_ROLES; r++) {
        mf_sink_printf(s, "%s{\"id\":%u,\"name\":\"%s\",", r ? "," : "", r, mf_role_name(r));
        color_json(s, mf_svg_role_color(r));
        mf_sink_putc(s, '}');
    }
    mf_sink_puts(s, "],\"warnings\":[");
    for (size_t i = 0; i < mf_index_n_warnings(a->ix); i++) {
        mf_sink_puts(s, i ? "," : "");
        str(s, mf_index_warning(a->ix, i));
    }
    mf_sink_puts(s, "],\"views\":[");
    for (size_t i = 0; i < mf_index_n_views(a->ix); i++)
        view_json(a, i);
    mf_sink_puts(s, "]}\n");
}

/* ---- window ------------------------------------------------------------------------------ */

/* Is b shown under the request's filters (hidden scopes, sizes)? */
static int shown(const mf_view_request *rq, const mf_index_block *b)
{
    for (size_t i = 0; i < rq->n_hide; i++)
        if (rq->hide[i] == b->scope)
            return 0;
    return b->requested >= rq->min && (!rq->max || b->requested <= rq->max);
}

static int scope_shown(const mf_view_request *rq, uint32_t scope)
{
    for (size_t i = 0; i < rq->n_hide; i++)
        if (rq->hide[i] == scope)
            return 0;
    return 1;
}

/* The request's window: absolute times, addresses, the view's axis. */
typedef struct win {
    api *a;
    mf_axis axis;
    uint64_t t0, t1, a0, a1;
    mf_raster r;
    uint8_t *blocks;          /* blocks answered whole: MF_VIEW_BLOCK_BYTES each */
    size_t n, cap;
    int over;                 /* more than MF_VIEW_BLOCKS_MAX: a raster it is */
} win;

static int win_open(api *a, win *w)
{
    const mf_view_request *rq = a->rq;
    const mf_index_view *v = mf_index_view_at(a->ix, rq->view);
    memset(w, 0, sizeof *w);
    w->a = a;
    if (mf_axis_init(&w->axis, v->ranges.r, v->ranges.n, v->min_addr, v->max_addr) < 0)
        return -1;
    w->t0 = abs_time(a, rq->t0);
    w->t1 = abs_time(a, rq->t1);
    w->a0 = mf_axis_addr(&w->axis, rq->y0);
    w->a1 = mf_axis_addr(&w->axis, rq->y1);
    if (w->a1 < UINT64_MAX)
        w->a1++;
    return 0;
}

static void put_f64(uint8_t *p, double v)
{
    memcpy(p, &v, 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static int keep_whole(void *ctx, const mf_index_block *b)
{
    win *w = ctx;
    if (!shown(w->a->rq, b) || w->over)
        return 0;
    if (w->n == MF_VIEW_BLOCKS_MAX) {
        w->over = 1;
        return 0;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        uint8_t *p = realloc(w->blocks, cap * MF_VIEW_BLOCK_BYTES);
        if (!p)
            return -1;
        w->blocks = p;
        w->cap = cap;
    }
    uint8_t *p = w->blocks + w->n++ * MF_VIEW_BLOCK_BYTES;
    put_f64(p, (double)rel(w->a, b->alloc_ns));
    put_f64(p + 8, b->free_ns == MF_LIVE_AT_END ? -1.0 : (double)rel(w->a, b->free_ns));
    put_f64(p + 16, (double)b->addr);
    put_f64(p + 24, (double)b->requested);
    put_f64(p + 32, (double)b->actual);
    put_u32(p + 40, b->scope);
    put_u32(p + 44, b->stack);
    put_u32(p + 48, b->tid);
    put_u32(p + 52, b->name);
    put_u32(p + 56, (uint32_t)b->end | (uint32_t)b->flags << 8 | (uint32_t)b->role << 24);
    put_u32(p + 60, b->level);
    return 0;
}

/* Each block read: kept whole while they are few, and painted. */
static int paint_block(void *ctx, const mf_index_block *b)
{
    win *w = ctx;
    if (keep_whole(w, b) < 0)
        return -1;
    if (shown(w->a->rq, b))
        mf_raster_add(&w->r, b->alloc_ns, ix_end(w->a, b), b->addr,
                      b->actual ? b->actual : b->requested ? b->requested : 1, 1.0,
                      w->a->rq->by_role ? (uint32_t)(b->role & MF_ROLE_MASK) : b->scope);
    return w->r.oom ? -1 : 0;
}

static int paint_cell(void *ctx, const mf_index_cell *c)
{
    win *w = ctx;
    if (c->addr < w->a1 && c->addr + c->bytes > w->a0 && scope_shown(w->a->rq, c->scope))
        mf_raster_add(&w->r, c->t_from, c->t_to, c->addr, c->bytes, c->fill,
                      w->a->rq->by_role ? c->role : c->scope);
    return w->r.oom ? -1 : 0;
}

/* The level whose columns are about a pixel wide, or the finest with cells. */
static int cell_level_for(const api *a, uint64_t t0, uint64_t t1, uint32_t w)
{
    double ns_px = (double)(t1 - t0) / w;
    int l = mf_index_cell_level(a->ix);
    while (l < MF_INDEX_LEVELS - 1 && ldexp(1.5, (int)(mf_index_wshift(a->ix) + (unsigned)l)) < ns_px)
        l++;
    return l;
}

/* Blocks whole (mode 0) when the window holds few; else a raster of the
 * page's pixels (mode 1), from the blocks while the pieces the window
 * reads hold not too many (one pass: kept whole and painted), else from
 * the cells of the index. */
static int window_answer(api *a)
{
    const mf_view_request *rq = a->rq;
    win w;
    int rc = -1, level = -1;
    if (win_open(a, &w) < 0)
        return -1;
    uint64_t most = mf_index_count_blocks(a->ix, rq->view, w.t0, w.t1, w.a0, w.a1,
                                          MF_VIEW_RASTER_BLOCKS);
    if (mf_raster_init(&w.r, &w.axis, rq->w, rq->h, w.t0, w.t1, rq->y0, rq->y1) < 0)
        goto out;
    if (most <= MF_VIEW_RASTER_BLOCKS) {   /* read them: whole if few are in the window */
        if (mf_index_blocks(a->ix, rq->view, w.t0, w.t1, w.a0, w.a1, paint_block, &w, a->err,
                            sizeof a->err) < 0)
            goto out;
        if (!w.over) {
            uint8_t head[8];
            put_u32(head, 0);
            put_u32(head + 4, (uint32_t)w.n);
            mf_sink_write(&a->s, head, sizeof head);
            mf_sink_write(&a->s, w.blocks, w.n * MF_VIEW_BLOCK_BYTES);
            rc = 0;
            goto out;
        }
    } else {
        level = cell_level_for(a, w.t0, w.t1, rq->w);
        if (mf_index_cells(a->ix, rq->view, level, w.t0, w.t1, paint_cell, &w, a->err,
                           sizeof a->err) < 0)
            goto out;
    }
    size_t px = (size_t)rq->w * rq->h;
    uint8_t *pix = malloc(2 * px + 1);
    if (!pix || mf_raster_finish(&w.r, pix, pix + px) < 0) {
        free(pix);
        goto out;
    }
    uint8_t head[24];
    put_u32(head, 1);
    put_u32(head + 4, rq->w);
    put_u32(head + 8, rq->h);
    put_u32(head + 12, (uint32_t)w.r.n_layers);
    put_u32(head + 16, (uint32_t)level);
    put_u32(head + 20, (uint32_t)(most > MF_VIEW_RASTER_BLOCKS ? MF_VIEW_RASTER_BLOCKS + 1 : most));
    mf_sink_write(&a->s, head, sizeof head);
    for (size_t i = 0; i < w.r.n_layers; i++) {
        uint8_t id[4];
        put_u32(id, w.r.scope[i]);
        mf_sink_write(&a->s, id, 4);
    }
    mf_sink_write(&a->s, pix, 2 * px);
    free(pix);
    rc = 0;
out:
    mf_raster_free(&w.r);
    mf_axis_free(&w.axis);
    free(w.blocks);
    a->binary = 1;
    return rc;
}

/* ---- the block under the pointer ------------------------------------------------------------ */

typedef struct largest {
    const mf_view_request *rq;
    mf_index_block best;
    int found;
} largest;

static int pick_largest(void *ctx, const mf_index_block *b)
{
    largest *l = ctx;
    if (shown(l->rq, b) && (!l->found || b->requested > l->best.requested)) {
        l->best = *b;
        l->found = 1;
    }
    return 0;
}

static int at_answer(api *a)
{
    win w;
    largest l = { .rq = a->rq };
    if (win_open(a, &w) < 0)
        return -1;
    int rc = mf_index_blocks(a->ix, a->rq->view, w.t0, w.t1, w.a0, w.a1, pick_largest, &l,
                             a->err, sizeof a->err);
    mf_axis_free(&w.axis);
    if (rc < 0)
        return -1;
    mf_sink_puts(&a->s, "{\"block\":");
    if (l.found)
        block_json(a, &l.best);
    else
        mf_sink_puts(&a->s, "null");
    mf_sink_puts(&a->s, "}\n");
    return 0;
}

/* ---- occupancy ----------------------------------------------------------------------------- */

static int on_occ(void *ctx, const mf_index_occ *o)
{
    api *a = ctx;
    mf_sink_printf(&a->s, "%s%llu,%llu,%llu,%llu,", a->n_cells++ ? "," : "",
                   (unsigned long long)o->col, (unsigned long long)o->min,
                   (unsigned long long)o->max, (unsigned long long)o->last);
    if (o->sample == UINT64_MAX)
        mf_sink_puts(&a->s, "-1");
    else
        mf_sink_u64(&a->s, o->sample);
    return 0;
}

static int occupancy_answer(api *a)
{
    const mf_view_request *rq = a->rq;
    int level = 0;
    size_t cols = rq->cols < 1 ? 1 : rq->cols > MF_VIEW_COLS_MAX ? MF_VIEW_COLS_MAX : rq->cols;
    mf_sink s_points = { 0 };
    mf_sink keep = a->s;
    a->s = s_points;
    int rc = mf_index_occupancy(a->ix, rq->view, abs_time(a, rq->t0), abs_time(a, rq->t1), cols,
                                &level, on_occ, a, a->err, sizeof a->err);
    s_points = a->s;
    a->s = keep;
    if (rc >= 0) {
        mf_sink_printf(&a->s, "{\"level\":%d,\"points\":[", level);
        mf_sink_write(&a->s, s_points.buf, s_points.len);
        mf_sink_puts(&a->s, "]}\n");
    }
    mf_sink_free(&s_points);
    return rc < 0 ? -1 : 0;
}

/* ---- stacks ------------------------------------------------------------------------------------ */

#define STACK_MAX 256

static void frame_json(mf_sink *s, const mf_site_frame *f)
{
    mf_sink_puts(s, "{\"function\":");
    str(s, f->function);
    mf_sink_puts(s, ",\"file\":");
    if (f->file)
        str(s, f->file);
    else
        mf_sink_puts(s, "null");
    mf_sink_printf(s, ",\"line\":%u,\"module\":", f->line);
    if (f->module)
        str(s, f->module);
    else
        mf_sink_puts(s, "null");
    mf_sink_putc(s, '}');
}

static void stack_answer(api *a)
{
    mf_sites *sites = mf_index_sites(a->ix);
    mf_site_frame frames[STACK_MAX];
    size_t n = sites && a->rq->stack ? mf_sites_frames(sites, a->rq->stack, frames, STACK_MAX)
                                     : 0;
    mf_sink_printf(&a->s, "{\"stack\":%u,\"frames\":[", a->rq->stack);
    for (size_t i = 0; i < n; i++) {
        mf_sink_puts(&a->s, i ? "," : "");
        frame_json(&a->s, &frames[i]);
    }
    mf_sink_puts(&a->s, "]}\n");
}

/* ---- a range: the flame graph at its peak, what grew ------------------------------------------- */

typedef struct peak_find {
    uint64_t best, col;
    int found;
} peak_find;

static int on_peak_occ(void *ctx, const mf_index_occ *o)
{
    peak_find *p = ctx;
    if (!p->found || o->max > p->best) {
        p->best = o->max;
        p->col = o->col;
        p->found = 1;
    }
    return 0;
}

typedef struct change {
    uint64_t t;
    int64_t delta;
} change;

typedef struct sweep {
    change *c;
    size_t n, cap;
    uint64_t from, to;
    int full;
} sweep;

static int add_change(sweep *w, uint64_t t, int64_t d)
{
    if (t < w->from || t > w->to)
        return 0;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        change *c = cap > (1u << 22) ? NULL : realloc(w->c, cap * sizeof *c);
        if (!c) {
            w->full = 1;
            return 1;
        }
        w->c = c;
        w->cap = cap;
    }
    w->c[w->n++] = (change){ t, d };
    return 0;
}

static int on_sweep_block(void *ctx, const mf_index_block *b)
{
    sweep *w = ctx;
    if (add_change(w, b->alloc_ns, (int64_t)b->requested))
        return 1;
    return b->free_ns != MF_LIVE_AT_END ? add_change(w, b->free_ns, -(int64_t)b->requested) : 0;
}

static int by_time(const void *pa, const void *pb)
{
    const change *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->delta < b->delta ? -1 : a->delta > b->delta;   /* frees first at a tie */
}

/* The moment in [from, to] (absolute) when the view held the most. */
static uint64_t peak_moment(api *a, uint64_t from, uint64_t to)
{
    peak_find p = { 0 };
    int level;
    if (mf_index_occupancy(a->ix, a->rq->view, from, to, 2048, &level, on_peak_occ, &p, a->err,
                           sizeof a->err) < 0 || !p.found)
        return from;
    unsigned ws = mf_index_wshift(a->ix) + (unsigned)level;
    uint64_t c0 = abs_time(a, p.col << ws), c1 = abs_time(a, ((p.col + 1) << ws) - 1);
    c0 = c0 < from ? from : c0;
    c1 = c1 > to ? to : c1;
    sweep w = { .from = c0, .to = c1 };
    uint64_t best_t = c0;
    if (mf_index_blocks(a->ix, a->rq->view, c0, c1, 0, UINT64_MAX, on_sweep_block, &w, a->err,
                        sizeof a->err) >= 0 && !w.full) {
        qsort(w.c, w.n, sizeof *w.c, by_time);
        int64_t run = 0, best = 0;
        for (size_t i = 0; i < w.n; i++) {
            run += w.c[i].delta;
            if (run > best && (i + 1 == w.n || w.c[i + 1].t != w.c[i].t)) {
                best = run;
                best_t = w.c[i].t;
            }
        }
    }
    free(w.c);
    return best_t;
}

/* A flame graph node: one frame under its parent. */
typedef struct fnode {
    const char *name;
    uint64_t bytes;
    int child, next;          /* indices; -1 none */
} fnode;

typedef struct flame {
    api *a;
    fnode *n;
    size_t count, cap;
    int full;
    uint64_t live_bytes, live_blocks;
} flame;

static int child_of(flame *f, int parent, const char *name)
{
    for (int c = f->n[parent].child; c >= 0; c = f->n[c].next)
        if (!strcmp(f->n[c].name, name))
            return c;
    if (f->count == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        fnode *n = cap > 100000 ? NULL : realloc(f->n, cap * sizeof *n);
        if (!n) {
            f->full = 1;
            return -1;
        }
        f->n = n;
        f->cap = cap;
    }
    f->n[f->count] = (fnode){ .name = name, .child = -1, .next = f->n[parent].child };
    f->n[parent].child = (int)f->count;
    return (int)f->count++;
}

static int on_flame_block(void *ctx, const mf_index_block *b)
{
    flame *f = ctx;
    mf_site_frame frames[STACK_MAX];
    mf_sites *sites = mf_index_sites(f->a->ix);
    size_t n = sites && b->stack ? mf_sites_frames(sites, b->stack, frames, STACK_MAX) : 0;
    f->live_bytes += b->requested;
    f->live_blocks++;
    f->n[0].bytes += b->requested;
    int at = 0;
    if (n == 0) {                      /* no stack: the scope stands for it */
        at = child_of(f, 0, string(f->a, b->scope));
        if (at >= 0)
            f->n[at].bytes += b->requested;
        return 0;
    }
    for (size_t i = n; i-- > 0 && at >= 0;) {
        at = child_of(f, at, frames[i].function);
        if (at >= 0)
            f->n[at].bytes += b->requested;
    }
    return 0;
}

static void flame_json(mf_sink *s, const flame *f, int node, int depth)
{
    mf_sink_puts(s, "{\"name\":");
    str(s, f->n[node].name);
    mf_sink_printf(s, ",\"bytes\":%llu,\"children\":[", (unsigned long long)f->n[node].bytes);
    int first = 1;
    for (int c = f->n[node].child; c >= 0 && depth < 200; c = f->n[c].next) {
        mf_sink_puts(s, first ? "" : ",");
        first = 0;
        flame_json(s, f, c, depth + 1);
    }
    mf_sink_puts(s, "]}");
}

/* Bytes held at a moment by key (scope or site), signed for the difference. */
typedef struct held_by {
    api *a;
    struct keyed { uint64_t key; int64_t bytes; } *k;
    size_t n, cap;
    int sign, full;
} held_by;

static int on_held_block(void *ctx, const mf_index_block *b)
{
    held_by *h = ctx;
    if (h->n + 2 > h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        struct keyed *k = cap > (1u << 23) ? NULL : realloc(h->k, cap * sizeof *k);
        if (!k) {
            h->full = 1;
            return 1;
        }
        h->k = k;
        h->cap = cap;
    }
    int64_t d = h->sign * (int64_t)b->requested;
    mf_sites *sites = mf_index_sites(h->a->ix);
    h->k[h->n++] = (struct keyed){ (uint64_t)b->scope, d };
    h->k[h->n++] = (struct keyed){ (1ull << 32) | (sites ? mf_sites_of_stack(sites, b->stack)
                                                         : 0), d };
    return 0;
}

static int by_key(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int by_growth(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

static void growth_json(api *a, held_by *h)
{
    size_t n = 0;
    qsort(h->k, h->n, sizeof *h->k, by_key);
    for (size_t i = 0; i < h->n; i++) {          /* fold equal keys */
        if (n && h->k[n - 1].key == h->k[i].key)
            h->k[n - 1].bytes += h->k[i].bytes;
        else
            h->k[n++] = h->k[i];
    }
    qsort(h->k, n, sizeof *h->k, by_growth);
    mf_sites *sites = mf_index_sites(a->ix);
    for (int pass = 0; pass < 2; pass++) {
        mf_sink_puts(&a->s, pass ? "],\"sites\":[" : ",\"scopes\":[");
        size_t shown = 0;
        for (size_t i = 0; i < n && shown < MF_VIEW_TOP; i++) {
            if ((h->k[i].key >> 32) != (uint64_t)pass || h->k[i].bytes <= 0 || (pass && !sites))
                continue;
            uint32_t id = (uint32_t)h->k[i].key;
            mf_sink_puts(&a->s, shown++ ? ",{\"name\":" : "{\"name\":");
            str(&a->s, pass ? mf_sites_get(sites, id)->name : string(a, id));
            mf_sink_printf(&a->s, ",\"grew\":%lld}", (long long)h->k[i].bytes);
        }
    }
    mf_sink_puts(&a->s, "]");
}

static int range_answer(api *a)
{
    uint64_t from = abs_time(a, a->rq->t0), to = abs_time(a, a->rq->t1);
    uint64_t peak = peak_moment(a, from, to);
    flame f = { .a = a };
    held_by h = { .a = a, .sign = -1 };
    int rc = -1;
    f.n = malloc(256 * sizeof *f.n);
    if (!f.n)
        return -1;
    f.cap = 256;
    f.count = 1;
    f.n[0] = (fnode){ .name = "all", .child = -1, .next = -1 };
    if (mf_index_live_at(a->ix, a->rq->view, peak, on_flame_block, &f, a->err,
                         sizeof a->err) < 0 ||
        mf_index_live_at(a->ix, a->rq->view, from, on_held_block, &h, a->err,
                         sizeof a->err) < 0)
        goto out;
    h.sign = 1;
    if (mf_index_live_at(a->ix, a->rq->view, to, on_held_block, &h, a->err, sizeof a->err) < 0)
        goto out;
    mf_sink_printf(&a->s, "{\"peak_time\":%llu,\"live_bytes\":%llu,\"live_blocks\":%llu,"
                   "\"partial\":%s,\"flame\":", (unsigned long long)rel(a, peak),
                   (unsigned long long)f.live_bytes, (unsigned long long)f.live_blocks,
                   f.full || h.full ? "true" : "false");
    flame_json(&a->s, &f, 0, 0);
    growth_json(a, &h);
    mf_sink_puts(&a->s, "}\n");
    rc = 0;
out:
    free(f.n);
    free(h.k);
    return rc;
}

/* ---- dispatch -------------------------------------------------------------------------------- */

int mf_view_api(mf_index *ix, const mf_view_request *rq, mf_view_answer *out)
{
    api a = { .ix = ix, .rq = rq };
    int rc = 0;
    if ((rq->given & MF_VQ_VIEW) && rq->view >= mf_index_n_views(ix))
        return error_answer(out, 404, "no such view");
    switch (rq->endpoint) {
    case MF_VIEW_META: meta(&a); break;
    case MF_VIEW_WINDOW: rc = window_answer(&a); break;
    case MF_VIEW_OCCUPANCY: rc = occupancy_answer(&a); break;
    case MF_VIEW_STACK: stack_answer(&a); break;
    case MF_VIEW_RANGE: rc = range_answer(&a); break;
    case MF_VIEW_AT: rc = at_answer(&a); break;
    default: return error_answer(out, 404, "no such endpoint");
    }
    if (rc < 0 || a.s.error) {
        mf_sink_free(&a.s);
        return error_answer(out, 500, a.err[0] ? a.err : "out of memory");
    }
    out->status = 200;
    out->binary = a.binary;
    out->len = a.s.len;
    out->body = mf_sink_take(&a.s);
    return out->body ? 0 : -1;
}
