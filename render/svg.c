/*
 * svg.c - memory_flow: the time x address picture of a model, drawn with
 * Cairo into an SVG, PNG or PDF (by the file's extension).
 *
 * Data flow: model (analyze/model/model.h: per device, one view per process) ->
 * panels (here: the processes with the largest peaks get a panel each, the
 * rest share one, svg_group.c) -> layout (svg_layout.c: time axis,
 * compressed address axis per panel) and colours (svg_color.c) -> drawing
 * (svg_marks.c: title, axes; svg_curve.c; svg_legend.c; svg_blocks.c:
 * blocks) on a Cairo surface.  For SVG, Cairo writes into memory, the hover
 * overlay (svg_overlay.c) is spliced in before </svg>, and the result must
 * stay under 10 MB: if it does not, it is drawn again with fewer blocks
 * drawn one by one (the rest become pixels), so any model fits.
 */
#include "svg.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler.h"
#include "outfile.h"
#include "svg_group.h"
#include "svg_panel.h"

#define SVG_MAX_BYTES (10u << 20)      /* the bound on any memory_flow.svg */
#define VECTOR_QUOTA 20000             /* blocks drawn one by one, at most */
#define OVERLAY_BUDGET (6u << 20)      /* bytes of hover entries, at most */
#define MAX_PANELS 16                  /* process panels stop splitting here */

typedef enum out_format { FORMAT_SVG, FORMAT_PNG, FORMAT_PDF } out_format;

/* The laid-out picture: one panel per process shown on each device. */
typedef struct page {
    const mf_model *model;
    const char *title;
    mf_svg_panel *panels;
    size_t n, cap;
    mf_svg_group *groups;     /* the "other processes" panels' views */
    size_t n_groups;
    const mf_view **order;    /* the views of every device, in panel order */
    size_t n_order;
    double small_pct;         /* below this percent of the largest peak: small */
    double width, height;
} page;

static int format_of(const char *path, out_format *format)
{
    const char *dot = strrchr(path, '.');
    if (!dot)
        return -1;
    if (strcasecmp(dot, ".svg") == 0)
        *format = FORMAT_SVG;
    else if (strcasecmp(dot, ".png") == 0)
        *format = FORMAT_PNG;
    else if (strcasecmp(dot, ".pdf") == 0)
        *format = FORMAT_PDF;
    else
        return -1;
    return 0;
}

static void free_page(page *pg)
{
    for (size_t i = 0; i < pg->n; i++)
        mf_svg_colors_free(&pg->panels[i].colors);
    for (size_t i = 0; i < pg->n_groups; i++)
        mf_svg_group_free(&pg->groups[i]);
    free(pg->groups);
    free(pg->order);
    free(pg->panels);
    memset(pg, 0, sizeof *pg);
}

/* An empty view: a device seen only through samples or names. */
static const mf_view empty_view;

/* Lay out the next panel, drawing view (made of sources) of device. */
static int layout_panel(page *pg, const mf_device_model *device, const mf_view *view,
                        const mf_view *const *sources, size_t n_sources, size_t n_pids,
                        mf_color_by by)
{
    if (pg->n == pg->cap) {
        size_t cap = pg->cap ? 2 * pg->cap : 4;
        mf_svg_panel *panels = realloc(pg->panels, cap * sizeof *panels);
        if (!panels)
            return -1;
        pg->panels = panels;
        pg->cap = cap;
    }
    size_t i = pg->n;
    mf_svg_panel *p = &pg->panels[i];
    memset(p, 0, sizeof *p);
    pg->n++;
    p->model = pg->model;
    p->dev = view;
    p->sources = sources;
    p->n_sources = n_sources;
    p->device = device;
    p->pid = n_pids == 1 ? view->pid : 0;
    p->n_pids = n_pids;
    mf_svg_panel_box_at(i, &p->box);
    mf_svg_time_axis_init(&p->time, pg->model->t0_ns, pg->model->t1_ns, MF_SVG_PLOT_X0,
                          MF_SVG_PLOT_X1);
    mf_svg_addr_axis_build(&p->addr, view->ranges, view->n_ranges, p->box.map_top,
                           p->box.map_bottom);
    return mf_svg_colors_build(&p->colors, pg->model, view, by);
}

/* How many panels one device may get for its processes: 8, fewer when
 * many devices are shown, so the page stays within MAX_PANELS panels. */
static size_t process_panels(const mf_model *model, int only)
{
    size_t shown = 0;
    for (size_t d = 0; d < model->n_devices; d++)
        shown += only < 0 || model->devices[d].device == (uint16_t)only;
    size_t share = shown ? MAX_PANELS / shown : MAX_PANELS;
    return share < 8 ? share : 8;
}

/* Whether view v is one of the processes that lead: the device's largest
 * (largest is dev->views[0]) or a Python interpreter. */
static int leads(const mf_view *v, const mf_view *largest)
{
    return v == largest || v->interpreter;
}

/* The panels of one device: the largest process and the Python processes
 * first, then the others by peak, each its own; the processes that held
 * little (mf_model_small_process), and those past the share, in one
 * summary panel. */
static int layout_device(page *pg, const mf_device_model *dev, size_t share, mf_color_by by)
{
    size_t n = dev->n_views;
    if (n == 0)
        return layout_panel(pg, dev, &empty_view, NULL, 0, 0, by);
    if (n == 1)
        return layout_panel(pg, dev, dev->views[0], (const mf_view *const *)dev->views, 1, 0,
                            by);
    const mf_view **order = pg->order + pg->n_order;
    size_t k = 0, big = 0;
    for (int pass = 0; pass < 3; pass++)   /* leaders, others held much, small ones */
        for (size_t v = 0; v < n; v++) {
            const mf_view *w = dev->views[v];
            int small = mf_model_small_process(pg->model, w->process_peak, w->interpreter,
                                               pg->small_pct);
            int want = pass == 0 ? leads(w, dev->views[0])
                     : pass == 1 ? !leads(w, dev->views[0]) && !small
                                 : !leads(w, dev->views[0]) && small;
            if (want)
                order[k++] = w;
            big += want && pass < 2;
        }
    pg->n_order += n;
    size_t own = big > share || (big == share && big < n) ? share - 1 : big;
    if (own == 0)
        own = 1;
    if (n - own == 1 && own < share)
        own = n;           /* no summary of one: it gets its own panel */
    for (size_t v = 0; v < own; v++)
        if (layout_panel(pg, dev, order[v], &order[v], 1, 1, by) < 0)
            return -1;
    if (own == n)
        return 0;
    mf_svg_group *g = &pg->groups[pg->n_groups];
    if (mf_svg_group_build(g, &order[own], n - own) < 0)
        return -1;
    pg->n_groups++;
    return layout_panel(pg, dev, &g->view, g->sources, g->n_sources, n - own, by);
}

/* Lay out the devices opt asks for.  Errors name what is wrong. */
static int layout_page(page *pg, const mf_model *model, const mf_svg_options *opt, char *err,
                       size_t errlen)
{
    memset(pg, 0, sizeof *pg);
    pg->model = model;
    pg->title = opt ? opt->title : NULL;
    int only = opt ? opt->only_device : -1;
    mf_color_by by = opt ? opt->color_by : MF_COLOR_BY_SCOPE;
    if (by == MF_COLOR_BY_SITE && !model->sites) {
        snprintf(err, errlen, "colouring by site needs call stacks: record with memflow run "
                 "--stacks");
        return -1;
    }
    double below = opt ? opt->summary_below : 0;
    pg->small_pct = below == 0 ? MF_SMALL_PROCESS_PCT : below < 0 ? 0 : below;
    size_t views = 0;
    for (size_t d = 0; d < model->n_devices; d++)
        views += model->devices[d].n_views;
    pg->groups = calloc(model->n_devices ? model->n_devices : 1, sizeof *pg->groups);
    pg->order = calloc(views ? views : 1, sizeof *pg->order);
    int ok = pg->groups != NULL && pg->order != NULL;
    size_t share = process_panels(model, only);
    for (size_t d = 0; ok && d < model->n_devices; d++) {
        const mf_device_model *dev = &model->devices[d];
        if (only < 0 || dev->device == (uint16_t)only)
            ok = layout_device(pg, dev, share, by) == 0;
    }
    if (!ok) {
        free_page(pg);
        snprintf(err, errlen, "out of memory laying out memory_flow");
        return -1;
    }
    if (only >= 0 && pg->n == 0) {
        char name[16];
        snprintf(err, errlen, "device %s has no memory events in this log",
                 mf_device_name((uint16_t)only, name, sizeof name));
        free_page(pg);
        return -1;
    }
    pg->width = MF_SVG_PAGE_WIDTH;
    pg->height = mf_svg_page_height(pg->n);
    return 0;
}

/* Vector blocks of panel i: its share of quota by blocks kept whole. */
static size_t panel_quota(const page *pg, size_t i, size_t quota)
{
    size_t total = 0;
    for (size_t k = 0; k < pg->n; k++)
        total += pg->panels[k].dev->n_blocks;
    if (total <= quota)
        return pg->panels[i].dev->n_blocks;
    double share = (double)pg->panels[i].dev->n_blocks / (double)total;
    return (size_t)(share * (double)quota);
}

/* Draw the whole picture on cr; overlay (SVG only) gets the hover layer. */
static int draw_page(cairo_t *cr, page *pg, size_t quota, mf_sink *overlay, size_t budget)
{
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    if (mf_svg_draw_title(cr, pg->model, pg->panels, pg->n, pg->title, overlay) != 0)
        return -1;
    if (pg->n == 0) {
        mf_svg_set_rgb(cr, mf_svg_live_color);
        mf_svg_show_text(cr, MF_SVG_PLOT_X0, MF_SVG_TITLE_H + 60, MF_SVG_LEFT, 13, 0,
                         "no memory events in this log", 80);
    }
    for (size_t i = 0; i < pg->n; i++) {
        mf_svg_panel *p = &pg->panels[i];
        if (mf_svg_draw_curve(cr, p, overlay) != 0)
            return -1;
        mf_svg_draw_map_background(cr, p);
        if (mf_svg_draw_blocks(cr, p, panel_quota(pg, i, quota), overlay, budget) != 0)
            return -1;
        mf_svg_draw_map_marks(cr, p);
        if (mf_svg_draw_ooms(cr, p, overlay) != 0 || mf_svg_draw_legend(cr, p, overlay) != 0)
            return -1;
    }
    return cairo_status(cr) == CAIRO_STATUS_SUCCESS ? 0 : -1;
}

static cairo_status_t write_to_buf(void *closure, const unsigned char *data, unsigned int length)
{
    mf_sink *s = closure;
    mf_sink_write(s, data, length);
    return s->error ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

int mf_svg_document(double width, double height, mf_svg_draw_fn draw, void *ctx, mf_sink *out,
                    char *err, size_t errlen)
{
    mf_sink overlay = { 0 };
    cairo_surface_t *surface = cairo_svg_surface_create_for_stream(write_to_buf, out, width,
                                                                   height);
    cairo_svg_surface_restrict_to_version(surface, CAIRO_SVG_VERSION_1_1);
    cairo_svg_surface_set_document_unit(surface, CAIRO_SVG_UNIT_PX);
    cairo_t *cr = cairo_create(surface);
    int rc = draw(cr, ctx, &overlay);
    cairo_status_t status = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(surface);
    if (status == CAIRO_STATUS_SUCCESS)
        status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (rc != 0 || status != CAIRO_STATUS_SUCCESS || out->error) {
        snprintf(err, errlen, "drawing failed: %s",
                 status != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(status) : "out of memory");
        rc = -1;
    } else if (mf_svg_overlay_splice(out, &overlay) != 0) {
        snprintf(err, errlen, "out of memory adding the hover layer");
        rc = -1;
    }
    mf_sink_free(&overlay);
    return rc;
}

typedef struct page_draw {
    page *pg;
    size_t quota, budget;
} page_draw;

static int draw_page_svg(cairo_t *cr, void *ctx, mf_sink *overlay)
{
    page_draw *d = ctx;
    return draw_page(cr, d->pg, d->quota, overlay, d->budget);
}

/* The SVG document with quota vector blocks and its hover overlay in out. */
static int render_svg(page *pg, size_t quota, size_t budget, mf_sink *out, char *err,
                      size_t errlen)
{
    page_draw d = { pg, quota, budget };
    return mf_svg_document(pg->width, pg->height, draw_page_svg, &d, out, err, errlen);
}

/* SVG: draw, and draw again with fewer vector blocks until under the bound. */
static int write_svg(page *pg, const char *path, char *err, size_t errlen)
{
    char why[256];
    size_t quota = VECTOR_QUOTA, budget = OVERLAY_BUDGET;
    for (;;) {
        mf_sink out = { 0 };
        if (render_svg(pg, quota, budget, &out, why, sizeof why) != 0) {
            mf_sink_free(&out);
            snprintf(err, errlen, "%s: %s", path, why);
            return -1;
        }
        if (out.len <= SVG_MAX_BYTES || quota == 0) {
            int rc = out.len <= SVG_MAX_BYTES ? mf_outfile_write_all(path, out.buf, out.len, err, errlen)
                                               : -1;
            if (out.len > SVG_MAX_BYTES)
                snprintf(err, errlen, "%s: the picture needs %zu bytes, over the %u-byte bound",
                         path, out.len, SVG_MAX_BYTES);
            mf_sink_free(&out);
            return rc;
        }
        mf_sink_free(&out);
        quota /= 4;
        budget /= 4;
    }
}

/*
 * Draw the page on a raster or PDF surface and finish it into the output
 * file o: a PNG is encoded from the image, a PDF is complete when its
 * surface is finished.  One path for both, so they report failures alike
 * ("PATH: cannot write PNG: why"); the file is renamed into place only when
 * complete.
 */
static int write_surface(page *pg, cairo_surface_t *surface, mf_outfile *o, const char *kind,
                         char *err, size_t errlen)
{
    cairo_t *cr = cairo_create(surface);
    int rc = draw_page(cr, pg, VECTOR_QUOTA, NULL, 0);
    cairo_status_t status = cairo_status(cr);
    cairo_destroy(cr);
    if (rc == 0 && status == CAIRO_STATUS_SUCCESS &&
        cairo_surface_get_type(surface) == CAIRO_SURFACE_TYPE_IMAGE)
        status = cairo_surface_write_to_png_stream(surface, write_to_buf, &o->sink);
    cairo_surface_finish(surface);
    if (status == CAIRO_STATUS_SUCCESS)
        status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (rc != 0 || status != CAIRO_STATUS_SUCCESS) {
        snprintf(err, errlen, "%s: cannot write %s: %s", o->path, kind,
                 o->sink.error ? strerror(o->sink.error)
                 : status != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(status)
                                                  : "out of memory");
        mf_outfile_abort(o);
        return -1;
    }
    return mf_outfile_commit(o, err, errlen);
}

static int write_png(page *pg, const char *path, char *err, size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    return write_surface(pg,
                         cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)pg->width,
                                                    (int)pg->height),
                         &o, "PNG", err, errlen);
}

static int write_pdf(page *pg, const char *path, char *err, size_t errlen)
{
    mf_outfile o;
    if (mf_outfile_open(&o, path, err, errlen) < 0)
        return -1;
    return write_surface(pg, cairo_pdf_surface_create_for_stream(write_to_buf, &o.sink, pg->width,
                                                                 pg->height),
                         &o, "PDF", err, errlen);
}

MF_EXPORT int mf_svg_write(const mf_model *model, const char *path, const mf_svg_options *opt,
                           char *err, size_t errlen)
{
    out_format format;
    page pg;
    char why[256];
    if (!model || !path) {
        snprintf(err, errlen, "memory_flow: no model or no output path");
        return -1;
    }
    if (format_of(path, &format) != 0) {
        snprintf(err, errlen, "%s: unknown picture format (expected .svg, .png or .pdf)", path);
        return -1;
    }
    if (layout_page(&pg, model, opt, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    int rc = format == FORMAT_SVG ? write_svg(&pg, path, err, errlen)
             : format == FORMAT_PNG ? write_png(&pg, path, err, errlen)
                                    : write_pdf(&pg, path, err, errlen);
    free_page(&pg);
    return rc;
}

MF_EXPORT int mf_svg_locate(const mf_model *model, const mf_svg_options *opt, uint16_t device,
                            uint32_t pid, uint64_t time_ns, uint64_t addr, double *x, double *y,
                            mf_svg_panel_box *box)
{
    page pg;
    char why[256];
    if (layout_page(&pg, model, opt, why, sizeof why) != 0)
        return -1;
    int rc = -1;
    for (size_t i = 0; i < pg.n; i++) {
        const mf_svg_panel *p = &pg.panels[i];
        if (p->device->device != device || rc == 0 || (pid != 0 && p->pid != pid))
            continue;
        if (x)
            *x = mf_svg_time_x(&p->time, time_ns);
        if (y)
            *y = mf_svg_addr_y(&p->addr, addr);
        if (box)
            *box = p->box;
        rc = 0;
    }
    free_page(&pg);
    return rc;
}
