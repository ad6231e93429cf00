/*
 * flamegraph.c - folded stacks and the flame graph of what was live at a
 * device's peak (see flamegraph.h).
 *
 * The stacks the model counted at the peak (mf_device_model.peak_stacks)
 * are symbolised (mf_sites_frames: from the site outward, inlined
 * functions as frames) and merged into a tree from the outermost frame:
 * a node per (parent, function name), its bytes the sum of the stacks
 * through it.  Folded lines come from a depth-first walk, children by
 * name; the flame graph draws the same walk, a row per depth from the
 * bottom, with Cairo on the memory_flow renderer's SVG machinery (svg.c's
 * document, svg_overlay.c's hover titles, svg_color.c's palette).
 */
#include "flamegraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "outfile.h"
#include "svg_panel.h"

#define MAX_FRAMES 512            /* logical frames of one stack */
#define TITLE_CHARS 400           /* of a frame's name in its hover title */
#define CHAR_PX 6.6               /* width of a character of the 11 px labels */

typedef struct node {
    const char *name, *file;
    unsigned line;
    uint32_t parent, depth;
    uint64_t total, self;         /* bytes through it; of stacks ending in it */
    uint32_t first_kid, n_kids;   /* into tree.kids, after build */
} node;

typedef struct tree {
    node *nodes;                  /* [0]: the root, all stacks */
    size_t n, cap;
    uint32_t *slots;              /* hash of (parent, name): node index + 1 */
    size_t n_slots;
    uint32_t *kids;               /* every node's children, by name */
    uint32_t max_depth;
} tree;

static uint64_t hash_of(uint32_t parent, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ parent;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return h;
}

static int rehash(tree *t)
{
    size_t n = t->n_slots ? t->n_slots * 2 : 1024;
    uint32_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 1; i < t->n; i++) {
        size_t at = hash_of(t->nodes[i].parent, t->nodes[i].name) & (n - 1);
        while (slots[at])
            at = (at + 1) & (n - 1);
        slots[at] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n;
    return 0;
}

/* The child of parent called f->function, added if new; 0 when out of memory. */
static uint32_t child(tree *t, uint32_t parent, const mf_site_frame *f)
{
    if ((t->n + 1) * 2 > t->n_slots && rehash(t) < 0)
        return 0;
    size_t at = hash_of(parent, f->function) & (t->n_slots - 1);
    for (; t->slots[at]; at = (at + 1) & (t->n_slots - 1)) {
        node *n = &t->nodes[t->slots[at] - 1];
        if (n->parent == parent && strcmp(n->name, f->function) == 0)
            return t->slots[at] - 1;
    }
    if (mf_grow((void **)&t->nodes, &t->cap, t->n + 1, sizeof *t->nodes) < 0)
        return 0;
    uint32_t depth = t->nodes[parent].depth + 1;
    t->nodes[t->n] = (node){ .name = f->function, .file = f->file, .line = f->line,
                             .parent = parent, .depth = depth };
    t->max_depth = depth > t->max_depth ? depth : t->max_depth;
    t->slots[at] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

/* Add one stack's bytes along its frames, outermost first. */
static int add_stack(tree *t, const mf_site_frame *frames, size_t n, uint64_t bytes)
{
    uint32_t at = 0;
    t->nodes[0].total += bytes;
    for (size_t i = n; i-- > 0;) {
        if (!(at = child(t, at, &frames[i])))
            return -1;
        t->nodes[at].total += bytes;
    }
    t->nodes[at].self += bytes;
    return 0;
}

/* The frames of a stack held at the peak; the pseudo stacks as one frame. */
static size_t stack_frames(const mf_model *m, uint32_t stack, mf_site_frame *out)
{
    size_t n = stack && stack != UINT32_MAX ? mf_sites_frames(m->sites, stack, out, MAX_FRAMES)
                                            : 0;
    if (n)
        return n;
    out[0] = (mf_site_frame){ stack == 0 ? "(no stack)"
                              : stack == UINT32_MAX ? "(other stacks)" : "(unreadable stack)",
                              NULL, 0, NULL };
    return 1;
}

static int by_name(const void *a, const void *b, void *ctx)
{
    const tree *t = ctx;
    return strcmp(t->nodes[*(const uint32_t *)a].name, t->nodes[*(const uint32_t *)b].name);
}

/* Every node's children in one array, by name. */
static int index_kids(tree *t)
{
    t->kids = malloc((t->n ? t->n : 1) * sizeof *t->kids);
    if (!t->kids)
        return -1;
    for (size_t i = 1; i < t->n; i++)
        t->nodes[t->nodes[i].parent].n_kids++;
    uint32_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        t->nodes[i].first_kid = at;
        at += t->nodes[i].n_kids;
        t->nodes[i].n_kids = 0;
    }
    for (size_t i = 1; i < t->n; i++) {
        node *p = &t->nodes[t->nodes[i].parent];
        t->kids[p->first_kid + p->n_kids++] = (uint32_t)i;
    }
    for (size_t i = 0; i < t->n; i++)
        qsort_r(t->kids + t->nodes[i].first_kid, t->nodes[i].n_kids, sizeof *t->kids, by_name, t);
    return 0;
}

static void tree_free(tree *t)
{
    free(t->nodes);
    free(t->slots);
    free(t->kids);
    memset(t, 0, sizeof *t);
}

static int tree_build(tree *t, const mf_model *m, const mf_device_model *dev)
{
    memset(t, 0, sizeof *t);
    mf_site_frame *frames = malloc(MAX_FRAMES * sizeof *frames);
    int rc = frames && mf_grow((void **)&t->nodes, &t->cap, 1, sizeof *t->nodes) == 0 ? 0 : -1;
    if (rc == 0) {
        t->nodes[0] = (node){ .name = "all" };
        t->n = 1;
    }
    for (size_t i = 0; rc == 0 && i < dev->n_peak_stacks; i++) {
        const mf_stack_share *s = &dev->peak_stacks[i];
        rc = add_stack(t, frames, stack_frames(m, s->stack, frames), s->bytes);
    }
    free(frames);
    if (rc == 0)
        rc = index_kids(t);
    if (rc < 0)
        tree_free(t);
    return rc;
}

const mf_device_model *mf_flame_device(const mf_model *m, int only)
{
    if (!m->sites)
        return NULL;
    for (size_t i = 0; i < m->n_devices; i++) {
        const mf_device_model *d = &m->devices[i];
        if (only >= 0 ? d->device == (uint16_t)only : d->n_peak_stacks > 0)
            return d;
    }
    return NULL;
}

/* ---- folded stacks ------------------------------------------------------------------ */

/* A frame's name as folded text: no ';' (the separator) and no line break. */
static void folded_name(mf_sink *out, const char *name)
{
    for (const char *p = name; *p; p++)
        mf_sink_putc(out, *p == ';' || *p == '\n' || *p == '\r' ? '_' : *p);
}

static void folded_path(mf_sink *out, const tree *t, uint32_t at)
{
    if (t->nodes[at].parent) {
        folded_path(out, t, t->nodes[at].parent);
        mf_sink_putc(out, ';');
    }
    folded_name(out, t->nodes[at].name);
}

int mf_folded_write(const mf_model *m, const mf_device_model *dev, const char *path, char *err,
                    size_t errlen)
{
    tree t;
    if (tree_build(&t, m, dev) < 0) {
        snprintf(err, errlen, "%s: out of memory folding the stacks", path);
        return -1;
    }
    mf_sink out = { 0 };
    uint32_t *todo = malloc((t.n ? t.n : 1) * sizeof *todo);   /* depth first, by name */
    size_t n_todo = 0;
    if (todo)
        todo[n_todo++] = 0;
    while (n_todo) {
        uint32_t at = todo[--n_todo];
        const node *nd = &t.nodes[at];
        if (at && nd->self) {
            folded_path(&out, &t, at);
            mf_sink_printf(&out, " %llu\n", (unsigned long long)nd->self);
        }
        for (uint32_t k = nd->n_kids; k-- > 0;)
            todo[n_todo++] = t.kids[nd->first_kid + k];
    }
    int rc = -1;
    if (!todo || out.error)
        snprintf(err, errlen, "%s: out of memory folding the stacks", path);
    else
        rc = mf_outfile_write_all(path, out.buf ? out.buf : "", out.len, err, errlen);
    free(todo);
    mf_sink_free(&out);
    tree_free(&t);
    return rc;
}

/* ---- the flame graph ------------------------------------------------------------------ */

typedef struct flame {
    const mf_model *model;
    const mf_device_model *dev;
    tree t;
    double height, scale;         /* px per byte */
} flame;

static double row_y(const flame *f, uint32_t depth)
{
    return f->height - 24 - (double)(depth + 1) * MF_FLAME_ROW;
}

static int frame_title(const flame *f, const node *n, mf_sink *overlay, double x, double y,
                       double w)
{
    char where[TITLE_CHARS + 32], held[200], count[32], human[32];
    const char *lines[3] = { n->name, where, held };
    snprintf(where, sizeof where, "%.*s:%u", TITLE_CHARS, n->file ? n->file : "", n->line);
    mf_format_count(n->total, count, sizeof count);
    snprintf(held, sizeof held, "%s B (%s), %.2f%% of the peak", count,
             mf_format_bytes(n->total, human, sizeof human),
             f->dev->peak_bytes ? 100.0 * (double)n->total / (double)f->dev->peak_bytes : 0.0);
    if (!n->file)
        lines[1] = held;
    return mf_svg_overlay_text(overlay, x, y, w, MF_FLAME_ROW - 1, lines, n->file ? 3 : 2);
}

/* Draw node at (its row, from x) and its children, with their titles. */
static int draw_node(cairo_t *cr, const flame *f, uint32_t at, double x, mf_sink *overlay)
{
    const node *n = &f->t.nodes[at];
    double w = (double)n->total * f->scale, y = row_y(f, n->depth);
    if (w < 0.1)
        return 0;                 /* too narrow to see: no frame, no title */
    mf_svg_set_rgb(cr, mf_svg_scope_color(n->name));
    cairo_rectangle(cr, x, y, w, MF_FLAME_ROW - 1);
    cairo_fill(cr);
    size_t fits = (size_t)((w - 6) / CHAR_PX);
    if (fits >= 3) {
        size_t len = strlen(n->name);
        mf_svg_set_rgb(cr, mf_svg_text_color);
        mf_svg_show_text(cr, x + 3, y + MF_FLAME_ROW - 5, MF_SVG_LEFT, 11, 0, n->name,
                         len <= fits ? fits : fits - 3);
    }
    if (overlay && frame_title(f, n, overlay, x, y, w) != 0)
        return -1;
    for (uint32_t k = 0; k < n->n_kids; k++) {
        uint32_t kid = f->t.kids[n->first_kid + k];
        if (draw_node(cr, f, kid, x, overlay) != 0)
            return -1;
        x += (double)f->t.nodes[kid].total * f->scale;
    }
    return 0;
}

static int draw_flame(cairo_t *cr, void *ctx, mf_sink *overlay)
{
    const flame *f = ctx;
    char dev[16], human[32], at[32], line[512];
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    snprintf(line, sizeof line, "memflow: live at the peak of %s, by call stack",
             mf_model_device_name(f->dev->device, dev, sizeof dev));
    mf_svg_set_rgb(cr, mf_svg_text_color);
    mf_svg_show_text(cr, MF_FLAME_MARGIN, 22, MF_SVG_LEFT, 16, 1, line, 200);
    uint64_t t0 = f->model->t0_ns, when = f->dev->peak_time_ns;
    snprintf(line, sizeof line, "%s at %s; width is bytes held, frames from the allocating "
             "function (top) to the outermost (bottom); hover a frame for details",
             mf_format_bytes(f->dev->peak_bytes, human, sizeof human),
             mf_format_time(when > t0 ? when - t0 : 0, at, sizeof at));
    mf_svg_set_rgb(cr, mf_svg_muted_color);
    mf_svg_show_text(cr, MF_FLAME_MARGIN, 42, MF_SVG_LEFT, 12, 0, line, 200);
    return draw_node(cr, f, 0, MF_FLAME_MARGIN, overlay);
}

int mf_flame_write(const mf_model *m, const mf_device_model *dev, const char *path, char *err,
                   size_t errlen)
{
    flame f = { .model = m, .dev = dev };
    char why[256];
    if (tree_build(&f.t, m, dev) < 0) {
        snprintf(err, errlen, "%s: out of memory building the flame graph", path);
        return -1;
    }
    f.height = MF_FLAME_TOP + (double)(f.t.max_depth + 1) * MF_FLAME_ROW + 24;
    uint64_t total = f.t.nodes[0].total;
    f.scale = total ? (MF_FLAME_WIDTH - 2.0 * MF_FLAME_MARGIN) / (double)total : 0;
    mf_sink out = { 0 };
    int rc = mf_svg_document(MF_FLAME_WIDTH, f.height, draw_flame, &f, &out, why, sizeof why);
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", path, why);
    else
        rc = mf_outfile_write_all(path, out.buf, out.len, err, errlen);
    mf_sink_free(&out);
    tree_free(&f.t);
    return rc;
}
