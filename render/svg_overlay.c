/*
 * svg_overlay.c - the hover layer of memory_flow.svg.  Cairo cannot write
 * <title>, so svg.c collects one transparent, pointer-catching <rect> with
 * a <title> per block drawn one by one (same coordinates as the drawn
 * rectangle: the SVG document unit is px = Cairo user units) and splices
 * them in before </svg>.  Every string from the profiled program is
 * XML-escaped here.  See svg_panel.h.
 */
#include "svg_panel.h"

#include <stdlib.h>
#include <string.h>

#define HOVER_MAX_CHARS 160   /* of a scope, name or thread name in a title */

/* "5,120 B (5.00 KiB)" or "512 B". */
static void append_size(mf_sink *out, uint64_t bytes)
{
    char count[32], human[32];
    mf_format_count(bytes, count, sizeof count);
    if (bytes < 1024)
        mf_sink_printf(out, "%s B", count);
    else
        mf_sink_printf(out, "%s B (%s)", count, mf_format_bytes(bytes, human, sizeof human));
}

/* "allocated at 100 ms, freed at 600 ms (lived 500 ms)", or how else it
 * ended: live at the end, with its process, replaced. */
static void append_times(mf_sink *out, const mf_model *model, const mf_block *b)
{
    char at[32], until[32], lived[32];
    uint64_t t0 = model->t0_ns;
    mf_format_time(b->alloc_ns > t0 ? b->alloc_ns - t0 : 0, at, sizeof at);
    if (b->entered)
        mf_sink_printf(out, "live on entry to the window (allocated before it); ");
    if (b->free_ns == MF_LIVE_AT_END) {
        uint64_t held = model->t1_ns > b->alloc_ns ? model->t1_ns - b->alloc_ns : 0;
        mf_format_time(held, lived, sizeof lived);
        if (mf_model_cut(model))
            mf_sink_printf(out, "allocated at %s, live at the window's end (held %s)", at, lived);
        else
            mf_sink_printf(out, "allocated at %s, live at end (never freed; held %s)", at, lived);
        return;
    }
    uint64_t end = b->free_ns > b->alloc_ns ? b->free_ns : b->alloc_ns;
    mf_format_time(end > t0 ? end - t0 : 0, until, sizeof until);
    mf_format_time(end - b->alloc_ns, lived, sizeof lived);
    if (b->end == MF_BLOCK_PROCESS_ENDED)
        mf_sink_printf(out, "allocated at %s, never freed: held until its process ended at %s "
                       "(held %s)", at, until, lived);
    else if (b->end == MF_BLOCK_REPLACED)
        mf_sink_printf(out, "allocated at %s, ended at %s when its address was allocated "
                       "again (no free was recorded; lived %s)", at, until, lived);
    else
        mf_sink_printf(out, "allocated at %s, freed at %s (lived %s)", at, until, lived);
}

/* "\ndevice memory, stream-ordered, reused from a pool cache": what the
 * flags say about a block, or nothing for plain CPU heap. */
static void append_kind(mf_sink *out, unsigned flags)
{
    static const char *const kinds[] = { "heap", "device memory", "pinned host memory",
                                         "managed memory", "memory pool", "other memory",
                                         "mapped virtual memory (cuMemMap)" };
    unsigned kind = (flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT;
    const char *sep = "\n";
    if (kind != MF_MEM_HEAP) {
        mf_sink_printf(out, "%s%s", sep, kind < sizeof kinds / sizeof kinds[0] ? kinds[kind]
                                                                                 : "unknown memory");
        sep = ", ";
    }
    int tensor = (flags & MF_FLAG_SUBBLOCK) && kind == MF_MEM_DEVICE;
    static const struct { unsigned flag; const char *text; } notes[] = {
        { MF_FLAG_ASYNC, "stream-ordered" },
        { MF_FLAG_BEFORE, "live before recording began" },
        { MF_FLAG_REUSED, "reused from a pool cache" },
        { MF_FLAG_REALLOC, "from a realloc" },
        { MF_FLAG_EXPLICIT, "reported by memflow_record_alloc" },
        { MF_FLAG_REGISTERED, "registered host memory, not allocated" },
        { MF_FLAG_SUBBLOCK, "a region inside another block" },
    };
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        if (flags & notes[i].flag) {
            const char *text = notes[i].text;
            if (tensor && notes[i].flag == MF_FLAG_SUBBLOCK)
                text = "a tensor inside its segment";
            else if (tensor && notes[i].flag == MF_FLAG_REUSED)
                text = "served from the allocator's cache";
            mf_sink_printf(out, "%s%s", sep, text);
            sep = ", ";
        }
}

/* "
let go at 12 ms (the allocator took it back later)": a sub-block
 * the program released before its FREE (PyTorch's free_requested). */
static void append_release(mf_sink *out, const mf_model *model, const mf_block *b)
{
    if (!b->release_ns)
        return;
    char at[32], wait[32];
    uint64_t t0 = model->t0_ns;
    mf_format_time(b->release_ns > t0 ? b->release_ns - t0 : 0, at, sizeof at);
    if (b->free_ns != MF_LIVE_AT_END && b->free_ns >= b->release_ns)
        mf_sink_printf(out, "\nlet go at %s; the allocator took it back %s later", at,
                       mf_format_time(b->free_ns - b->release_ns, wait, sizeof wait));
    else
        mf_sink_printf(out, "\nlet go at %s; not yet taken back by the allocator", at);
}

#define HOVER_FRAMES 3        /* top frames of a block's stack in its title */

/* "\nallocated in:\n  make_node (tree.c:42)\n  ...": the top frames of the
 * block's stack from its site outward, when the log has stacks. */
static void append_frames(mf_sink *out, const mf_model *model, const mf_block *b)
{
    mf_site_frame frames[HOVER_FRAMES];
    size_t n = model->sites && b->stack ? mf_sites_frames(model->sites, b->stack, frames,
                                                          HOVER_FRAMES) : 0;
    if (n)
        mf_sink_write(out, "\nallocated in:", 14);
    for (size_t i = 0; i < n; i++) {
        const char *file = frames[i].file ? strrchr(frames[i].file, '/') : NULL;
        file = file ? file + 1 : frames[i].file;
        mf_sink_write(out, "\n  ", 3);
        mf_escape_xml(out, frames[i].function, HOVER_MAX_CHARS);
        if (file) {
            mf_sink_write(out, " (", 2);
            mf_escape_xml(out, file, HOVER_MAX_CHARS);
            mf_sink_printf(out, ":%u)", frames[i].line);
        }
    }
}

int mf_svg_overlay_block(mf_sink *overlay, const mf_svg_panel *panel, const mf_block *block,
                         const mf_svg_rect *rect)
{
    const mf_model *model = panel->model;
    char device[16];
    uint64_t span = mf_block_span(block);
    uint64_t end = block->addr > UINT64_MAX - span ? UINT64_MAX : block->addr + span;
    mf_sink_printf(overlay, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>",
                      rect->x, rect->y, rect->w, rect->h);
    mf_sink_write(overlay, "scope: ", 7);
    mf_escape_xml(overlay, mf_svg_string(model, block->scope), HOVER_MAX_CHARS);
    mf_sink_write(overlay, "\nname: ", 7);
    mf_escape_xml(overlay, mf_svg_string(model, block->name), HOVER_MAX_CHARS);
    if (block->role & MF_ROLE_MASK)   /* a tensor's role */
        mf_sink_printf(overlay, " (%s)", mf_role_name(block->role));
    mf_sink_write(overlay, "\nrequested ", 11);
    append_size(overlay, block->requested);
    mf_sink_write(overlay, ", actual ", 9);
    append_size(overlay, block->actual);
    mf_sink_printf(overlay, "\naddress 0x%llx - 0x%llx on %s\n", (unsigned long long)block->addr,
                      (unsigned long long)end, mf_device_name(block->device, device, sizeof device));
    append_times(overlay, model, block);
    append_release(overlay, model, block);
    mf_sink_printf(overlay, "\nthread %u", block->tid);
    const char *name = mf_model_thread_name(model, block->pid, block->tid);
    if (name) {
        mf_sink_write(overlay, " (", 2);
        mf_escape_xml(overlay, name, HOVER_MAX_CHARS);
        mf_sink_write(overlay, ")", 1);
    }
    mf_sink_printf(overlay, ", pid %u", block->pid);
    append_kind(overlay, block->flags);
    append_frames(overlay, model, block);
    mf_sink_write(overlay, "</title></rect>\n", 16);
    return overlay->error ? -1 : 0;
}

int mf_svg_overlay_note(mf_sink *overlay, double x, double y, double w, double h,
                        const char *title)
{
    mf_sink_printf(overlay, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\"><title>", x, y,
                      w, h);
    mf_escape_xml(overlay, title, 4 * HOVER_MAX_CHARS);
    mf_sink_write(overlay, "</title></rect>\n", 16);
    return overlay->error ? -1 : 0;
}

int mf_svg_overlay_text(mf_sink *overlay, double x, double y, double w, double h,
                        const char *const *lines, size_t n)
{
    mf_sink_printf(overlay, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\"><title>", x, y,
                      w, h);
    for (size_t i = 0; i < n; i++) {
        if (i)
            mf_sink_write(overlay, "\n", 1);
        mf_escape_xml(overlay, lines[i], 4 * HOVER_MAX_CHARS);
    }
    mf_sink_write(overlay, "</title></rect>\n", 16);
    return overlay->error ? -1 : 0;
}

int mf_svg_overlay_lines(mf_sink *overlay, double x, double y, double w, double h,
                         const char *first, const char *second)
{
    const char *lines[2] = { first, second };
    return mf_svg_overlay_text(overlay, x, y, w, h, lines, 2);
}

/* Offset of the last "</svg>" in buf, or -1. */
static long find_closing_tag(const mf_sink *buf)
{
    static const char tag[] = "</svg>";
    size_t n = sizeof tag - 1;
    if (!buf->buf || buf->len < n)
        return -1;
    for (size_t at = buf->len - n + 1; at-- > 0;)
        if (memcmp(buf->buf + at, tag, n) == 0)
            return (long)at;
    return -1;
}

int mf_svg_overlay_splice(mf_sink *svg, const mf_sink *overlay)
{
    static const char head[] =
        "<g id=\"memflow-hover\" fill=\"#000000\" fill-opacity=\"0\" stroke=\"none\" "
        "pointer-events=\"all\">\n"
        "<style>#memflow-hover rect:hover { fill-opacity: 0.2; }</style>\n";
    static const char tail[] = "</g>\n";
    long at = find_closing_tag(svg);
    if (at < 0)
        return -1;
    mf_sink out = { 0 };
    mf_sink_write(&out, svg->buf, (size_t)at);
    mf_sink_write(&out, head, sizeof head - 1);
    mf_sink_write(&out, overlay->buf, overlay->len);
    mf_sink_write(&out, tail, sizeof tail - 1);
    mf_sink_write(&out, svg->buf + at, svg->len - (size_t)at);
    if (out.error) {
        mf_sink_free(&out);
        return -1;
    }
    mf_sink_free(svg);
    *svg = out;
    return 0;
}
