/*
 * svg_color.h - colours of the memory_flow picture: a fixed palette indexed
 * by a hash of the scope string (stable across runs), the legend of the
 * scopes holding the most bytes at a device's peak, and the lifetime and
 * size ramps of --color-by.
 *
 * Data flow: svg.c builds one mf_svg_colors per panel from the model, asks
 * it for each block's colour index, and draws the legend from it.
 */
#ifndef MEMFLOW_SVG_COLOR_H
#define MEMFLOW_SVG_COLOR_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "svg.h"

#define MF_SVG_PALETTE_SIZE 16
#define MF_SVG_COLOR_OTHER MF_SVG_PALETTE_SIZE   /* scopes not in the legend */
#define MF_SVG_COLOR_BEFORE (MF_SVG_PALETTE_SIZE + 1)  /* held from before training
                                                          (MF_LEGEND_BEFORE_TRAINING) */
#define MF_SVG_RAMP_STEPS 32
#define MF_SVG_LEGEND_MAX 10

typedef struct mf_svg_rgb {
    uint8_t r, g, b;
} mf_svg_rgb;

/* Fixed colours of the marks around the blocks. */
extern const mf_svg_rgb mf_svg_background;   /* the map where nothing lived */
extern const mf_svg_rgb mf_svg_peak_color;   /* peak line and marker */
extern const mf_svg_rgb mf_svg_live_color;   /* the "live at end" edge */
extern const mf_svg_rgb mf_svg_subblock_color; /* a sub-block's outline (then live_color
                                                  inside it) */
extern const mf_svg_rgb mf_svg_curve_color;  /* live bytes from the events */
extern const mf_svg_rgb mf_svg_sample_color; /* allocator / driver samples */
extern const mf_svg_rgb mf_svg_curve_fill;   /* shade under the events' curve */
extern const mf_svg_rgb mf_svg_text_color;   /* labels */
extern const mf_svg_rgb mf_svg_muted_color;  /* secondary labels, ticks */
extern const mf_svg_rgb mf_svg_frame_color;  /* frames, tick marks, breaks */
extern const mf_svg_rgb mf_svg_grid_color;   /* the curve's grid lines */
extern const mf_svg_rgb mf_svg_step_color;   /* step marks (optimizer steps) */
extern const mf_svg_rgb mf_svg_before_color; /* memory held from before training */

/* The palette colour of a scope string: palette[FNV-1a(scope) % 16]. */
mf_svg_rgb mf_svg_scope_color(const char *scope);

/* The fixed colour of a role (role & MF_ROLE_MASK; grey for unknown). */
mf_svg_rgb mf_svg_role_color(unsigned role);

typedef struct mf_svg_legend_entry {
    uint32_t scope;           /* model string id, or the site id (site mode) */
    const char *label;        /* the scope's text or the site's name */
    uint64_t bytes_at_peak;   /* requested bytes live at the device's peak */
    uint64_t bytes_total;     /* requested bytes allocated in all */
    uint8_t color;            /* colour index */
} mf_svg_legend_entry;

/* Colour state of one panel: blocks map to small colour indices. */
typedef struct mf_svg_colors {
    mf_color_by by;
    mf_svg_rgb table[MF_SVG_RAMP_STEPS];   /* index -> colour */
    size_t n_table;
    uint8_t *scope_color;     /* by scope id (scope mode), by site id (site mode) */
    uint32_t n_scopes;
    mf_svg_legend_entry legend[MF_SVG_LEGEND_MAX];
    size_t n_legend;
    uint64_t other_at_peak;   /* bytes at peak of scopes not in the legend */
    size_t other_scopes;      /* how many such scopes */
    double ramp_lo, ramp_hi;  /* log of the ramp's ends (lifetime ns or bytes) */
    uint64_t ramp_lo_value, ramp_hi_value;
    uint64_t t1;              /* end of the log: lifetime of live blocks */
    struct mf_sites *sites;   /* the model's (site mode) */
} mf_svg_colors;

/*
 * Build the colours of view (a panel) of model for mode by: in scope mode
 * the legend (the view's top scopes by bytes at the peak, then by bytes
 * allocated; legend colours are distinct), in site mode the same of the
 * device's allocation sites (held at the device's peak; the model needs
 * stacks and mf_model_options.tiles_by MF_TILES_BY_SITE), in role mode the
 * device's roles with fixed colours (MF_TILES_BY_ROLE), otherwise the ramp's range (the
 * view's shortest and longest lifetime, smallest and largest size).
 * Returns 0, or -1 when out of memory.
 */
int mf_svg_colors_build(mf_svg_colors *colors, const mf_model *model, const mf_view *view,
                        mf_color_by by);

/* The colour index of a block (into colors->table). */
uint8_t mf_svg_block_color(const mf_svg_colors *colors, const mf_block *block);

/* The colour index of a tile cell (tiles.h). */
uint8_t mf_svg_tile_color(const mf_svg_colors *colors, const mf_tile *tile);

void mf_svg_colors_free(mf_svg_colors *colors);

/* The model's string id as text ("unknown" for an id it lacks). */
const char *mf_svg_string(const mf_model *model, uint32_t id);

#endif /* MEMFLOW_SVG_COLOR_H */
