/*
 * svg_color.c - the palette, the per-panel legend of scopes at the peak,
 * and the lifetime / size ramps.  See svg_color.h for the contracts.
 */
#include "svg_color.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Tableau 20 without its reds (the peak line is red) and greys ("other"). */
static const mf_svg_rgb palette[MF_SVG_PALETTE_SIZE] = {
    { 0x1f, 0x77, 0xb4 }, { 0xae, 0xc7, 0xe8 }, { 0xff, 0x7f, 0x0e }, { 0xff, 0xbb, 0x78 },
    { 0x2c, 0xa0, 0x2c }, { 0x98, 0xdf, 0x8a }, { 0x94, 0x67, 0xbd }, { 0xc5, 0xb0, 0xd5 },
    { 0x8c, 0x56, 0x4b }, { 0xc4, 0x9c, 0x94 }, { 0xe3, 0x77, 0xc2 }, { 0xf7, 0xb6, 0xd2 },
    { 0xbc, 0xbd, 0x22 }, { 0xdb, 0xdb, 0x8d }, { 0x17, 0xbe, 0xcf }, { 0x9e, 0xda, 0xe5 },
};
static const mf_svg_rgb other_color = { 0xbd, 0xbd, 0xbd };

const mf_svg_rgb mf_svg_background = { 0xf8, 0xf8, 0xf8 };
const mf_svg_rgb mf_svg_peak_color = { 0xe4, 0x1a, 0x1c };
const mf_svg_rgb mf_svg_live_color = { 0x22, 0x22, 0x22 };
const mf_svg_rgb mf_svg_subblock_color = { 0xff, 0xff, 0xff };
const mf_svg_rgb mf_svg_curve_color = { 0x31, 0x5f, 0x9e };
const mf_svg_rgb mf_svg_sample_color = { 0xf0, 0x8c, 0x00 };
const mf_svg_rgb mf_svg_curve_fill = { 0xcb, 0xd8, 0xeb };
const mf_svg_rgb mf_svg_text_color = { 0x22, 0x22, 0x22 };
const mf_svg_rgb mf_svg_muted_color = { 0x70, 0x70, 0x70 };
const mf_svg_rgb mf_svg_frame_color = { 0xa0, 0xa0, 0xa0 };
const mf_svg_rgb mf_svg_grid_color = { 0xe6, 0xe6, 0xe6 };
const mf_svg_rgb mf_svg_step_color = { 0x55, 0x55, 0x99 };
const mf_svg_rgb mf_svg_before_color = { 0xa6, 0xb4, 0xc4 };

/* Stops of a viridis-like ramp, dark (short / small) to bright. */
static const mf_svg_rgb ramp_stops[] = {
    { 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 }, { 94, 201, 98 }, { 253, 231, 37 }
};

static uint32_t fnv1a(const char *text)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h;
}

mf_svg_rgb mf_svg_scope_color(const char *scope)
{
    return palette[fnv1a(scope) % MF_SVG_PALETTE_SIZE];
}

const char *mf_svg_string(const mf_model *model, uint32_t id)
{
    return mf_model_string(model, id);
}

/* Every key (scope or site id below n) "other" until the legend names it;
 * the palette as the colour table. */
static int start_colors(mf_svg_colors *c, uint32_t n)
{
    c->scope_color = malloc(n ? n : 1);
    if (!c->scope_color)
        return -1;
    c->n_scopes = n;
    memset(c->scope_color, MF_SVG_COLOR_OTHER, n);
    memcpy(c->table, palette, sizeof palette);
    c->table[MF_SVG_COLOR_OTHER] = other_color;
    c->table[MF_SVG_COLOR_BEFORE] = mf_svg_before_color;
    c->n_table = MF_SVG_PALETTE_SIZE + 2;
    return 0;
}

/* Name key (label) in the legend with its own colour: its palette colour,
 * or the next one not used yet. */
static void add_legend(mf_svg_colors *c, int *used, uint32_t key, const char *label,
                       uint64_t at_peak, uint64_t total)
{
    uint32_t color = fnv1a(label) % MF_SVG_PALETTE_SIZE;
    while (used[color])
        color = (color + 1) % MF_SVG_PALETTE_SIZE;
    used[color] = 1;
    c->legend[c->n_legend++] = (mf_svg_legend_entry){ key, label, at_peak, total, (uint8_t)color };
    c->scope_color[key] = (uint8_t)color;
}

/* Tensor scopes of the device (its sub-blocks of device memory, PyTorch's
 * tensors): most held at their peak first, then most allocated. */
static int tensor_scope_order(const void *pa, const void *pb)
{
    const mf_scope_stat *a = *(const mf_scope_stat *const *)pa;
    const mf_scope_stat *b = *(const mf_scope_stat *const *)pb;
    if (a->at_peak_bytes != b->at_peak_bytes)
        return a->at_peak_bytes > b->at_peak_bytes ? -1 : 1;
    if (a->alloc_bytes != b->alloc_bytes)
        return a->alloc_bytes > b->alloc_bytes ? -1 : 1;
    return a->scope < b->scope ? -1 : a->scope > b->scope;
}

/* Whether the view draws tensors: sub-blocks of device memory. */
static int has_tensors(const mf_view *view)
{
    for (size_t i = 0; i < view->n_subblocks; i++)
        if ((view->subblocks[i].flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT == MF_MEM_DEVICE)
            return 1;
    return 0;
}

/* The legend's first entries, for a view that draws tensors: the scopes of
 * the device's tensors.  0, or -1 when out of memory. */
static int tensor_legend(mf_svg_colors *c, int *used, const mf_model *model,
                         const mf_view *view)
{
    const mf_device_model *dev = mf_model_device(model, view->device);
    if (!dev || !dev->n_sub_scopes || !has_tensors(view))
        return 0;
    const mf_scope_stat **order = malloc(dev->n_sub_scopes * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < dev->n_sub_scopes; i++)
        order[i] = &dev->sub_scopes[i];
    qsort(order, dev->n_sub_scopes, sizeof *order, tensor_scope_order);
    for (size_t i = 0; i < dev->n_sub_scopes && c->n_legend < MF_SVG_LEGEND_MAX - 1; i++)
        if (order[i]->scope < c->n_scopes)
            add_legend(c, used, order[i]->scope, mf_svg_string(model, order[i]->scope),
                       order[i]->at_peak_bytes, order[i]->alloc_bytes);
    free(order);
    return 0;
}

/* Legend of the view's top scopes (already ranked by the model: bytes at
 * the peak, then bytes in all), after its tensors' scopes when it draws
 * PyTorch's tensors; every other scope gets the "other" colour. */
static int build_scope_colors(mf_svg_colors *c, const mf_model *model, const mf_view *view)
{
    uint32_t n_scopes = model->n_strings > 2 ? model->n_strings : 2;
    if (start_colors(c, n_scopes) < 0)
        return -1;
    int used[MF_SVG_PALETTE_SIZE] = { 0 };
    if (tensor_legend(c, used, model, view) < 0)
        return -1;
    for (size_t i = 0; i < view->n_scopes; i++) {
        const mf_legend_scope *s = &view->scopes[i];
        if (s->scope == MF_LEGEND_BEFORE_TRAINING && c->n_legend < MF_SVG_LEGEND_MAX) {
            c->legend[c->n_legend++] = (mf_svg_legend_entry){
                s->scope, "before training", s->bytes_at_peak, s->bytes_total,
                MF_SVG_COLOR_BEFORE };
            continue;
        }
        if (s->scope < n_scopes && c->scope_color[s->scope] != MF_SVG_COLOR_OTHER)
            continue;          /* a tensor scope too: named already */
        if (c->n_legend >= MF_SVG_LEGEND_MAX || s->scope >= n_scopes) {
            c->other_scopes++;
            c->other_at_peak += s->bytes_at_peak;
            continue;
        }
        add_legend(c, used, s->scope, mf_svg_string(model, s->scope), s->bytes_at_peak,
                   s->bytes_total);
    }
    return 0;
}

/* Sites of the device: most held at its peak first, then most allocated. */
static int site_order(const void *pa, const void *pb)
{
    const mf_site_stat *a = *(const mf_site_stat *const *)pa, *b = *(const mf_site_stat *const *)pb;
    if (a->at_peak_bytes != b->at_peak_bytes)
        return a->at_peak_bytes > b->at_peak_bytes ? -1 : 1;
    if (a->alloc_bytes != b->alloc_bytes)
        return a->alloc_bytes > b->alloc_bytes ? -1 : 1;
    return a->scope < b->scope ? -1 : a->scope > b->scope;
}

/* Legend of the device's top sites; every other site gets the "other" colour. */
static int build_site_colors(mf_svg_colors *c, const mf_model *model, const mf_view *view)
{
    const mf_device_model *dev = mf_model_device(model, view->device);
    size_t n = dev ? dev->n_sites : 0;
    uint32_t n_sites = mf_sites_count(model->sites);
    const mf_site_stat **order = malloc((n ? n : 1) * sizeof *order);
    if (!order || start_colors(c, n_sites) < 0) {
        free(order);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &dev->sites[i];
    qsort(order, n, sizeof *order, site_order);
    int used[MF_SVG_PALETTE_SIZE] = { 0 };
    for (size_t i = 0; i < n; i++) {
        const mf_site_stat *s = order[i];
        if (i >= MF_SVG_LEGEND_MAX || s->scope >= n_sites) {
            c->other_scopes++;
            c->other_at_peak += s->at_peak_bytes;
            continue;
        }
        add_legend(c, used, s->scope, mf_sites_get(model->sites, s->scope)->name,
                   s->at_peak_bytes, s->alloc_bytes);
    }
    free(order);
    return 0;
}

/* Fixed colours of the roles (enum mf_block_role): grey for none. */
static const mf_svg_rgb role_colors[MF_ROLES] = {
    { 0xbd, 0xbd, 0xbd }, { 0x1f, 0x77, 0xb4 }, { 0xff, 0x7f, 0x0e }, { 0x2c, 0xa0, 0x2c },
    { 0x94, 0x67, 0xbd }, { 0x8c, 0x56, 0x4b }, { 0xe3, 0x77, 0xc2 }, { 0xbc, 0xbd, 0x22 },
};

mf_svg_rgb mf_svg_role_color(unsigned role)
{
    return role_colors[role & MF_ROLE_MASK];
}

/* Role legend entries of stats[0..n) (a device's roles, or its tensors'),
 * most held at their peak first; names[role] their labels. */
static int add_role_legend(mf_svg_colors *c, const mf_scope_stat *stats, size_t n,
                           const char *const names[MF_ROLES])
{
    const mf_site_stat **order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = &stats[i];
    qsort(order, n, sizeof *order, site_order);
    for (size_t i = 0; i < n && c->n_legend < MF_SVG_LEGEND_MAX; i++) {
        const mf_scope_stat *s = order[i];
        c->legend[c->n_legend++] = (mf_svg_legend_entry){
            s->scope, names[s->scope & MF_ROLE_MASK], s->at_peak_bytes, s->alloc_bytes,
            (uint8_t)(s->scope & MF_ROLE_MASK) };
    }
    free(order);
    return 0;
}

/* Legend of the roles of the device, each role its fixed colour (index =
 * role): first, when the view draws tensors (sub-blocks in its segments),
 * their roles at the tensors' peak ("tensor: parameter"), then the roles
 * of its blocks at the device's peak. */
static int build_role_colors(mf_svg_colors *c, const mf_model *model, const mf_view *view)
{
    static const char *const tensor_names[MF_ROLES] = {
        "tensor: no role", "tensor: parameter", "tensor: gradient",
        "tensor: optimizer_state", "tensor: activation", "tensor: input", "tensor: temporary",
        "tensor: other" };
    const char *names[MF_ROLES];
    const mf_device_model *dev = mf_model_device(model, view->device);
    if (start_colors(c, MF_ROLES) < 0)
        return -1;
    for (unsigned r = 0; r < MF_ROLES; r++) {
        c->table[r] = role_colors[r];
        c->scope_color[r] = (uint8_t)r;
        names[r] = r ? mf_role_name(r) : "no role (not a tensor)";
    }
    if (!dev)
        return 0;
    if (has_tensors(view) && add_role_legend(c, dev->sub_roles, dev->n_sub_roles,
                                             tensor_names) < 0)
        return -1;
    return add_role_legend(c, dev->roles, dev->n_roles, names);
}

/* The value a ramp colours: lifetime (to the end if live) or size. */
static uint64_t ramp_value(const mf_svg_colors *c, const mf_block *b)
{
    if (c->by == MF_COLOR_BY_SIZE)
        return b->requested ? b->requested : 1;
    uint64_t end = b->free_ns == MF_LIVE_AT_END ? c->t1 : b->free_ns;
    return end > b->alloc_ns ? end - b->alloc_ns : 1;
}

static void build_ramp(mf_svg_colors *c, const mf_view *view)
{
    uint64_t lo = c->by == MF_COLOR_BY_SIZE ? view->size_min : view->life_min;
    uint64_t hi = c->by == MF_COLOR_BY_SIZE ? view->size_max : view->life_max;
    lo = lo ? lo : 1;
    hi = hi > lo ? hi : lo;
    c->ramp_lo_value = lo;
    c->ramp_hi_value = hi;
    c->ramp_lo = log((double)lo);
    c->ramp_hi = log((double)hi);
    size_t stops = sizeof ramp_stops / sizeof ramp_stops[0];
    for (size_t i = 0; i < MF_SVG_RAMP_STEPS; i++) {
        double pos = (double)i / (MF_SVG_RAMP_STEPS - 1) * (double)(stops - 1);
        size_t k = (size_t)pos < stops - 1 ? (size_t)pos : stops - 2;
        double f = pos - (double)k;
        const mf_svg_rgb *a = &ramp_stops[k], *b = &ramp_stops[k + 1];
        c->table[i] = (mf_svg_rgb){ (uint8_t)lround(a->r + f * (b->r - a->r)),
                                    (uint8_t)lround(a->g + f * (b->g - a->g)),
                                    (uint8_t)lround(a->b + f * (b->b - a->b)) };
    }
    c->n_table = MF_SVG_RAMP_STEPS;
}

int mf_svg_colors_build(mf_svg_colors *colors, const mf_model *model, const mf_view *view,
                        mf_color_by by)
{
    memset(colors, 0, sizeof *colors);
    colors->by = by;
    colors->t1 = model->t1_ns;
    colors->sites = model->sites;
    if (by == MF_COLOR_BY_SCOPE)
        return build_scope_colors(colors, model, view);
    if (by == MF_COLOR_BY_SITE)
        return model->sites ? build_site_colors(colors, model, view) : -1;
    if (by == MF_COLOR_BY_ROLE)
        return build_role_colors(colors, model, view);
    build_ramp(colors, view);
    return 0;
}

/* The ramp index of log(value). */
static uint8_t ramp_index(const mf_svg_colors *colors, double log_value)
{
    double range = colors->ramp_hi - colors->ramp_lo;
    if (range <= 0)
        return MF_SVG_RAMP_STEPS - 1;
    long i = lround((log_value - colors->ramp_lo) / range * (MF_SVG_RAMP_STEPS - 1));
    return (uint8_t)(i < 0 ? 0 : i >= MF_SVG_RAMP_STEPS ? MF_SVG_RAMP_STEPS - 1 : i);
}

/* The colour of a scope or site id (or MF_LEGEND_BEFORE_TRAINING). */
static uint8_t key_color(const mf_svg_colors *colors, uint32_t key)
{
    if (key == MF_LEGEND_BEFORE_TRAINING && colors->by == MF_COLOR_BY_SCOPE)
        return MF_SVG_COLOR_BEFORE;
    return key < colors->n_scopes ? colors->scope_color[key] : MF_SVG_COLOR_OTHER;
}

uint8_t mf_svg_block_color(const mf_svg_colors *colors, const mf_block *block)
{
    if (colors->by == MF_COLOR_BY_SCOPE)
        return key_color(colors, mf_block_legend_key(block->scope, block->role));
    if (colors->by == MF_COLOR_BY_SITE)
        return key_color(colors, mf_sites_of_stack(colors->sites, block->stack));
    if (colors->by == MF_COLOR_BY_ROLE)
        return key_color(colors, block->role & MF_ROLE_MASK);
    return ramp_index(colors, log((double)ramp_value(colors, block)));
}

uint8_t mf_svg_tile_color(const mf_svg_colors *colors, const mf_tile *tile)
{
    if (colors->by == MF_COLOR_BY_SCOPE || colors->by == MF_COLOR_BY_SITE ||
        colors->by == MF_COLOR_BY_ROLE)
        return key_color(colors, tile->scope);   /* a site id, a role in those modes */
    uint16_t cls = colors->by == MF_COLOR_BY_SIZE ? tile->size : tile->life;
    return ramp_index(colors, (double)cls / 256.0 * M_LN2);
}

void mf_svg_colors_free(mf_svg_colors *colors)
{
    free(colors->scope_color);
    colors->scope_color = NULL;
}
