/*
 * svg_marks.c - the drawing helpers every part of the memory_flow picture
 * uses (colours, text cleaned for Cairo, crisp lines), the title, and the
 * marks of each map: background, frame, address and time ticks, the breaks
 * where unused addresses are left out, and the peak line.  See svg_panel.h.
 */
#include "svg_panel.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_TICKS 64

void mf_svg_set_rgb(cairo_t *cr, mf_svg_rgb rgb)
{
    cairo_set_source_rgb(cr, rgb.r / 255.0, rgb.g / 255.0, rgb.b / 255.0);
}

void mf_svg_show_text(cairo_t *cr, double x, double y, mf_svg_align align, double size,
                      int bold, const char *text, size_t max_chars)
{
    char clean[1024];
    if (max_chars > 240)
        max_chars = 240;
    mf_clean_text(text, max_chars, clean, sizeof clean);
    cairo_select_font_face(cr, MF_SVG_FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    if (align != MF_SVG_LEFT) {
        cairo_text_extents_t ext;
        cairo_text_extents(cr, clean, &ext);
        x -= align == MF_SVG_RIGHT ? ext.x_advance : ext.x_advance / 2;
    }
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, clean);
}

/* Text in a colour. */
void mf_svg_colored_text(cairo_t *cr, mf_svg_rgb color, double x, double y, mf_svg_align align,
                         double size, int bold, const char *text)
{
    mf_svg_set_rgb(cr, color);
    mf_svg_show_text(cr, x, y, align, size, bold, text, 240);
}

void mf_svg_axis_title(cairo_t *cr, double y_mid, const char *text)
{
    cairo_save(cr);
    cairo_translate(cr, 16, y_mid);
    cairo_rotate(cr, -M_PI / 2);
    mf_svg_colored_text(cr, mf_svg_muted_color, 0, 0, MF_SVG_CENTER, 10, 0, text);
    cairo_restore(cr);
}

/* A 1-px line between pixel centres. */
void mf_svg_hline(cairo_t *cr, double x0, double x1, double y)
{
    cairo_move_to(cr, x0, floor(y) + 0.5);
    cairo_line_to(cr, x1, floor(y) + 0.5);
}

void mf_svg_vline(cairo_t *cr, double x, double y0, double y1)
{
    cairo_move_to(cr, floor(x) + 0.5, y0);
    cairo_line_to(cr, floor(x) + 0.5, y1);
}

/* ---- title ------------------------------------------------------------------ */

#define TITLE_MAX_CHARS 110   /* of the title line: fits the page at 16 px */
#define TITLE_DEVICES 4        /* peaks listed in the summary line */

/* Append printf-formatted text to the NUL-terminated line (len bytes). */
static void append(char *line, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *line, size_t len, const char *fmt, ...)
{
    size_t used = strlen(line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + used, len - used, fmt, ap);
    va_end(ap);
}

void mf_svg_oom_text(const mf_model *model, const mf_oom *o, char *buf, size_t len)
{
    char at[32], asked[32], res[32], alloc[32], gap[32], device[16];
    buf[0] = '\0';
    if (o->route == MF_OOM_KILLED) {
        append(buf, len, "Killed by an OOM killer at %s: %s held on %s",
               mf_format_time(o->time_ns > model->t0_ns ? o->time_ns - model->t0_ns : 0, at,
                              sizeof at),
               mf_format_bytes(o->reserved_bytes, res, sizeof res),
               mf_device_name(o->device, device, sizeof device));
        return;
    }
    append(buf, len, "Out of memory at %s on %s: %s asked, %s reserved, %s allocated",
           mf_format_time(o->time_ns > model->t0_ns ? o->time_ns - model->t0_ns : 0, at,
                          sizeof at),
           mf_device_name(o->device, device, sizeof device),
           mf_format_bytes(o->requested, asked, sizeof asked),
           mf_format_bytes(o->reserved_bytes, res, sizeof res),
           mf_format_bytes(o->allocated_bytes, alloc, sizeof alloc));
    if (o->tensors)
        append(buf, len, ", largest gap %s", mf_format_bytes(o->largest_gap, gap, sizeof gap));
}

int mf_svg_draw_title(cairo_t *cr, const mf_model *model, const mf_svg_panel *panels,
                      size_t n_panels, const char *title, mf_sink *overlay)
{
    char line[1024] = "", program[512] = "", head[1024], bytes[32], when[32], device[16];
    if (title)
        append(program, sizeof program, "%s", title);
    else
        append(program, sizeof program, "memflow: %s",
               model->n_processes && model->processes[0].program ? model->processes[0].program
                                                                 : "(program unknown)");
    for (size_t i = 0; i < model->n_processes; i++)
        if (model->processes[i].cpu_heap_off) {  /* say what was not recorded */
            char shown[TITLE_MAX_CHARS + 8];
            mf_clean_text(program, TITLE_MAX_CHARS - 48, shown, sizeof shown);
            snprintf(program, sizeof program, "%s - CPU heap not recorded (use memflow run)",
                     shown);
            break;
        }
    if (model->n_ooms) {   /* the post-mortem leads; the program goes to the summary */
        mf_svg_oom_text(model, &model->ooms[0], head, sizeof head);
        mf_svg_set_rgb(cr, mf_svg_peak_color);
        mf_svg_show_text(cr, 12, 22, MF_SVG_LEFT, 16, 1, head, TITLE_MAX_CHARS);
        append(line, sizeof line, "%.60s   |   ", program);
    } else {
        snprintf(head, sizeof head, "%s", program);
        mf_svg_set_rgb(cr, mf_svg_text_color);
        mf_svg_show_text(cr, 12, 22, MF_SVG_LEFT, 16, 1, head, TITLE_MAX_CHARS);
    }
    append(line, sizeof line, "duration %s",
           mf_format_time(model->t1_ns - model->t0_ns, when, sizeof when));
    if (model->torch.event_order)
        append(line, sizeof line, " (time: the order of PyTorch's allocator events)");
    size_t listed = 0, devices = 0;
    for (size_t i = 0; i < n_panels; i++) {
        if (i > 0 && panels[i].device == panels[i - 1].device)
            continue;           /* another process's panel of the same device */
        if (devices++ >= TITLE_DEVICES)
            continue;
        listed++;
        const mf_device_model *dev = panels[i].device;
        uint64_t at = dev->peak_time_ns > model->t0_ns ? dev->peak_time_ns - model->t0_ns : 0;
        append(line, sizeof line, "   |   %s peak %s at %s",
               mf_device_name(dev->device, device, sizeof device),
               mf_format_bytes(dev->peak_bytes, bytes, sizeof bytes),
               mf_format_time(at, when, sizeof when));
    }
    if (devices > listed)
        append(line, sizeof line, "   |   %zu more devices below", devices - listed);
    if (mf_model_windowed(model)) {
        append(line, sizeof line, "   |   window ");
        if (model->window_from_step)
            append(line, sizeof line, "from step %llu", (unsigned long long)model->window_from_step);
        else
            append(line, sizeof line, "from %s", mf_format_time(model->since_ns > model->origin_ns
                                                                    ? model->since_ns - model->origin_ns
                                                                    : 0, when, sizeof when));
        if (model->window_to_step)
            append(line, sizeof line, " to the end of step %llu",
                   (unsigned long long)model->window_to_step);
        else if (mf_model_cut(model))
            append(line, sizeof line, " to %s", mf_format_time(model->until_ns > model->origin_ns
                                                                  ? model->until_ns - model->origin_ns
                                                                  : 0, when, sizeof when));
    }
    if (model->n_processes > 1)
        append(line, sizeof line, "   |   %zu processes", model->n_processes);
    if (model->n_warnings > 0)
        append(line, sizeof line, "   |   %zu warning%s (see memflow stats)", model->n_warnings,
               model->n_warnings == 1 ? "" : "s");
    mf_svg_colored_text(cr, mf_svg_muted_color, 12, 42, MF_SVG_LEFT, 11, 0, line);
    return overlay ? mf_svg_overlay_lines(overlay, 12, 6, MF_SVG_PLOT_X1 - 12, 40, head, line) : 0;
}

/* ---- map ------------------------------------------------------------------ */

/* The vertical peak line from y0 to y1. */
static void draw_peak_line(cairo_t *cr, const mf_svg_panel *panel, double y0, double y1)
{
    if (panel->dev->peak_bytes == 0)
        return;
    mf_svg_vline(cr, mf_svg_time_x(&panel->time, panel->dev->peak_time_ns), y0, y1);
    mf_svg_set_rgb(cr, mf_svg_peak_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

void mf_svg_draw_map_background(cairo_t *cr, const mf_svg_panel *panel)
{
    cairo_rectangle(cr, MF_SVG_PLOT_X0, panel->box.map_top, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0,
                    MF_SVG_MAP_H);
    mf_svg_set_rgb(cr, mf_svg_background);
    cairo_fill(cr);
    /* Behind the blocks: the block allocated at the peak, often a
     * short-lived temporary one pixel wide, stays visible. */
    draw_peak_line(cr, panel, panel->box.map_top, panel->box.map_bottom);
}

/* A zig-zag line across [x0, x1] at y. */
static void zigzag(cairo_t *cr, double x0, double x1, double y)
{
    cairo_move_to(cr, x0, y);
    int up = 1;
    for (double x = x0 + 4; x <= x1; x += 4, up = !up)
        cairo_line_to(cr, x, up ? y - 2 : y + 2);
}

/* The collapsed gaps between address segments: a white band with zig-zag
 * edges labelled with the skipped size. */
static void draw_breaks(cairo_t *cr, const mf_svg_panel *panel)
{
    const mf_svg_addr_axis *axis = &panel->addr;
    for (size_t i = 0; i + 1 < axis->n; i++) {
        double lower = axis->seg[i].bottom - axis->seg[i].height;   /* top of segment i */
        double upper = axis->seg[i + 1].bottom;                     /* bottom of segment i+1 */
        cairo_rectangle(cr, MF_SVG_PLOT_X0 - 10, upper, MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 + 20,
                        lower - upper);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill(cr);
        zigzag(cr, MF_SVG_PLOT_X0 - 10, MF_SVG_PLOT_X1 + 10, upper + 3);
        zigzag(cr, MF_SVG_PLOT_X0 - 10, MF_SVG_PLOT_X1 + 10, lower - 3);
        mf_svg_set_rgb(cr, mf_svg_frame_color);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        char bytes[32], label[96];
        snprintf(label, sizeof label, "%s of unused addresses not shown",
                 mf_format_bytes(axis->seg[i + 1].start - axis->seg[i].end, bytes, sizeof bytes));
        mf_svg_colored_text(cr, mf_svg_muted_color, (MF_SVG_PLOT_X0 + MF_SVG_PLOT_X1) / 2.0, (upper + lower) / 2 + 3,
                     MF_SVG_CENTER, 8.5, 0, label);
    }
}

static void draw_address_ticks(cairo_t *cr, const mf_svg_panel *panel)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_addr_ticks(&panel->addr, ticks, MAX_TICKS);
    if (panel->dev->n_blocks == 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        cairo_move_to(cr, MF_SVG_PLOT_X0 - 4, floor(ticks[i].pos) + 0.5);
        cairo_line_to(cr, MF_SVG_PLOT_X0, floor(ticks[i].pos) + 0.5);
    }
    mf_svg_set_rgb(cr, mf_svg_frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_PLOT_X0 - 6, ticks[i].pos + 3, MF_SVG_RIGHT, 9, 0,
                     ticks[i].label);
    mf_svg_axis_title(cr, (panel->box.map_top + panel->box.map_bottom) / 2,
                      "address (compressed where unused)");
}

static void draw_time_ticks(cairo_t *cr, const mf_svg_panel *panel)
{
    mf_svg_tick ticks[MAX_TICKS];
    size_t n = mf_svg_time_ticks(&panel->time, ticks, MAX_TICKS);
    double bottom = panel->box.map_bottom, curve_bottom = panel->box.curve_bottom;
    for (size_t i = 0; i < n; i++) {
        mf_svg_vline(cr, ticks[i].pos, bottom, bottom + 4);
        mf_svg_vline(cr, ticks[i].pos, curve_bottom, curve_bottom + 3);
    }
    mf_svg_set_rgb(cr, mf_svg_frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (size_t i = 0; i < n; i++)
        mf_svg_colored_text(cr, mf_svg_muted_color, ticks[i].pos, bottom + 14, MF_SVG_CENTER, 9, 0,
                     ticks[i].label);
    mf_svg_colored_text(cr, mf_svg_muted_color, MF_SVG_PLOT_X1, bottom + 28, MF_SVG_RIGHT, 10, 0,
                 panel->model->torch.event_order
                     ? "event order (PyTorch's allocator events, 1 us apart: no time_us)"
                     : panel->model->since_ns ? "time since the window's start"
                                              : "time since start");
}

int mf_svg_draw_ooms(cairo_t *cr, const mf_svg_panel *panel, mf_sink *overlay)
{
    const mf_model *m = panel->model;
    for (size_t i = 0; i < m->n_ooms; i++) {
        const mf_oom *o = &m->ooms[i];
        if (o->device != panel->device->device || o->pid != panel->dev->pid)
            continue;
        double x = mf_svg_time_x(&panel->time, o->time_ns);
        cairo_save(cr);
        const double dash[] = { 4, 3 };
        cairo_set_dash(cr, dash, 2, 0);
        mf_svg_vline(cr, x, panel->box.curve_top, panel->box.map_bottom);
        mf_svg_set_rgb(cr, mf_svg_peak_color);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        cairo_restore(cr);
        mf_svg_colored_text(cr, mf_svg_peak_color, x + 3, panel->box.map_top + 12, MF_SVG_LEFT,
                            10, 1, "OOM");
        char text[512];
        mf_svg_oom_text(m, o, text, sizeof text);
        if (overlay && mf_svg_overlay_note(overlay, floor(x) - 2, panel->box.curve_top, 5,
                                           panel->box.map_bottom - panel->box.curve_top,
                                           text) != 0)
            return -1;
    }
    return 0;
}

/* Whether step mark k belongs to the panel: its process's marks, or every
 * mark for a panel of several processes or of a process that marked none. */
static int panel_step(const mf_svg_panel *panel, const mf_step_mark *k, int own)
{
    return !own || k->pid == panel->pid;
}

/* The step marks (optimizer steps): a thin line through the curve and a
 * tick over the map at each (never over the blocks), and "step N" at the
 * curve's top where labels do not crowd. */
static void draw_steps(cairo_t *cr, const mf_svg_panel *panel)
{
    const mf_model *m = panel->model;
    int own = 0;
    for (size_t i = 0; panel->pid && i < m->n_step_marks && !own; i++)
        own = m->step_marks[i].pid == panel->pid;
    double last_label = -1e9, last_line = -1e9;
    for (size_t i = 0; i < m->n_step_marks; i++) {
        const mf_step_mark *k = &m->step_marks[i];
        if (!panel_step(panel, k, own) || k->time_ns < m->t0_ns || k->time_ns > m->t1_ns)
            continue;
        double x = mf_svg_time_x(&panel->time, k->time_ns);
        if (x - last_line < 2)
            continue;          /* at most one line per two pixels */
        last_line = x;
        mf_svg_vline(cr, x, panel->box.curve_top, panel->box.curve_bottom);
        mf_svg_vline(cr, x, panel->box.map_top - 5, panel->box.map_top);
        cairo_set_source_rgba(cr, mf_svg_step_color.r / 255.0, mf_svg_step_color.g / 255.0,
                              mf_svg_step_color.b / 255.0, 0.55);
        cairo_set_line_width(cr, 1);
        cairo_stroke(cr);
        if (x - last_label < 48)
            continue;
        char label[32];
        snprintf(label, sizeof label, "step %llu", (unsigned long long)k->number);
        mf_svg_colored_text(cr, mf_svg_step_color, x + 2, panel->box.curve_top + 9, MF_SVG_LEFT,
                            8, 0, label);
        last_label = x;
    }
}

void mf_svg_draw_map_marks(cairo_t *cr, const mf_svg_panel *panel)
{
    draw_steps(cr, panel);
    cairo_rectangle(cr, MF_SVG_PLOT_X0 - 0.5, panel->box.map_top - 0.5,
                    MF_SVG_PLOT_X1 - MF_SVG_PLOT_X0 + 1, MF_SVG_MAP_H + 1);
    mf_svg_set_rgb(cr, mf_svg_frame_color);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    draw_breaks(cr, panel);
    draw_address_ticks(cr, panel);
    draw_time_ticks(cr, panel);
    draw_peak_line(cr, panel, panel->box.curve_top, panel->box.map_top);
    if (panel->dev->n_blocks == 0)
        mf_svg_colored_text(cr, mf_svg_muted_color, (MF_SVG_PLOT_X0 + MF_SVG_PLOT_X1) / 2.0,
                     (panel->box.map_top + panel->box.map_bottom) / 2, MF_SVG_CENTER, 12, 0,
                     "no allocations recorded on this device");
}
