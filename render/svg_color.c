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
const mf_svg_rgb mf_svg_curve_color = { 0x31, 0x5f, 0x9e };
const mf_svg_rgb mf_svg_sample_color = { 0xf0, 0x8c, 0x00 };
const mf_svg_rgb mf_svg_curve_fill = { 0xcb, 0xd8, 0xeb };
const mf_svg_rgb mf_svg_text_color = { 0x22, 0x22, 0x22 };
const mf_svg_rgb mf_svg_muted_color = { 0x70, 0x70, 0x70 };
const mf_svg_rgb mf_svg_frame_color = { 0xa0, 0xa0, 0xa0 };
const mf_svg_rgb mf_svg_grid_color = { 0xe6, 0xe6, 0xe6 };

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
    if (id < model->n_strings && model->strings && model->strings[id])
        return model->strings[id];
    return id == 1 ? "<unk>:" : "unknown";
}

static int block_live_at(const mf_block *block, uint64_t t)
{
    return block->alloc_ns <= t && (block->free_ns == MF_LIVE_AT_END || block->free_ns > t);
}

/* Does scope a (at_peak, total) rank before scope b? */
static int ranks_before(uint64_t peak_a, uint64_t total_a, uint32_t a, uint64_t peak_b,
                        uint64_t total_b, uint32_t b)
{
    if (peak_a != peak_b)
        return peak_a > peak_b;
    if (total_a != total_b)
        return total_a > total_b;
    return a < b;
}

/* Insert scope s into the sorted legend if it ranks among the top. */
static void legend_offer(mf_svg_colors *c, uint32_t s, uint64_t at_peak, uint64_t total)
{
    size_t n = c->n_legend;
    if (n == MF_SVG_LEGEND_MAX) {
        const mf_svg_legend_entry *last = &c->legend[n - 1];
        if (!ranks_before(at_peak, total, s, last->bytes_at_peak, last->bytes_total, last->scope))
            return;
        n--;
    } else {
        c->n_legend++;
    }
    while (n > 0 && ranks_before(at_peak, total, s, c->legend[n - 1].bytes_at_peak,
                                 c->legend[n - 1].bytes_total, c->legend[n - 1].scope)) {
        c->legend[n] = c->legend[n - 1];
        n--;
    }
    c->legend[n] = (mf_svg_legend_entry){ s, at_peak, total, 0 };
}

/* Legend of the top scopes; every other scope gets the "other" colour. */
static int build_scope_colors(mf_svg_colors *c, const mf_model *model, const mf_device_model *dev)
{
    uint32_t n_scopes = model->n_strings > 2 ? model->n_strings : 2;
    uint64_t *at_peak = calloc(n_scopes, sizeof *at_peak);
    uint64_t *total = calloc(n_scopes, sizeof *total);
    uint8_t *seen = calloc(n_scopes, 1);
    c->scope_color = malloc(n_scopes);
    if (!at_peak || !total || !seen || !c->scope_color) {
        free(at_peak);
        free(total);
        free(seen);
        return -1;
    }
    c->n_scopes = n_scopes;
    memset(c->scope_color, MF_SVG_COLOR_OTHER, n_scopes);
    for (size_t i = 0; i < dev->n_blocks; i++) {
        const mf_block *b = &dev->blocks[i];
        uint32_t s = b->scope < n_scopes ? b->scope : 0;
        seen[s] = 1;
        total[s] += b->requested;
        if (dev->peak_bytes && block_live_at(b, dev->peak_time_ns))
            at_peak[s] += b->requested;
    }
    for (uint32_t s = 0; s < n_scopes; s++)
        if (seen[s])
            legend_offer(c, s, at_peak[s], total[s]);
    int used[MF_SVG_PALETTE_SIZE] = { 0 };
    for (size_t i = 0; i < c->n_legend; i++) {
        uint32_t color = fnv1a(mf_svg_string(model, c->legend[i].scope)) % MF_SVG_PALETTE_SIZE;
        while (used[color])
            color = (color + 1) % MF_SVG_PALETTE_SIZE;
        used[color] = 1;
        c->legend[i].color = (uint8_t)color;
        c->scope_color[c->legend[i].scope] = (uint8_t)color;
    }
    for (uint32_t s = 0; s < n_scopes; s++)
        if (seen[s] && c->scope_color[s] == MF_SVG_COLOR_OTHER) {
            c->other_scopes++;
            c->other_at_peak += at_peak[s];
        }
    memcpy(c->table, palette, sizeof palette);
    c->table[MF_SVG_COLOR_OTHER] = other_color;
    c->n_table = MF_SVG_PALETTE_SIZE + 1;
    free(at_peak);
    free(total);
    free(seen);
    return 0;
}

/* The value a ramp colours: lifetime (to the end if live) or size. */
static uint64_t ramp_value(const mf_svg_colors *c, const mf_block *b)
{
    if (c->by == MF_COLOR_BY_SIZE)
        return b->requested ? b->requested : 1;
    uint64_t end = b->free_ns == MF_LIVE_AT_END ? c->t1 : b->free_ns;
    return end > b->alloc_ns ? end - b->alloc_ns : 1;
}

static void build_ramp(mf_svg_colors *c, const mf_device_model *dev)
{
    uint64_t lo = UINT64_MAX, hi = 1;
    for (size_t i = 0; i < dev->n_blocks; i++) {
        uint64_t v = ramp_value(c, &dev->blocks[i]);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo > hi)
        lo = hi;
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

int mf_svg_colors_build(mf_svg_colors *colors, const mf_model *model,
                        const mf_device_model *dev, mf_color_by by)
{
    memset(colors, 0, sizeof *colors);
    colors->by = by;
    colors->t1 = model->t1_ns;
    if (by == MF_COLOR_BY_SCOPE)
        return build_scope_colors(colors, model, dev);
    build_ramp(colors, dev);
    return 0;
}

uint8_t mf_svg_block_color(const mf_svg_colors *colors, const mf_block *block)
{
    if (colors->by == MF_COLOR_BY_SCOPE)
        return block->scope < colors->n_scopes ? colors->scope_color[block->scope]
                                               : colors->scope_color[0];
    double range = colors->ramp_hi - colors->ramp_lo;
    if (range <= 0)
        return MF_SVG_RAMP_STEPS - 1;
    double f = (log((double)ramp_value(colors, block)) - colors->ramp_lo) / range;
    long i = lround(f * (MF_SVG_RAMP_STEPS - 1));
    return (uint8_t)(i < 0 ? 0 : i >= MF_SVG_RAMP_STEPS ? MF_SVG_RAMP_STEPS - 1 : i);
}

void mf_svg_colors_free(mf_svg_colors *colors)
{
    free(colors->scope_color);
    colors->scope_color = NULL;
}
