/*
 * emitter.c - the table and JSON back-ends of emitter.h: each call writes
 * what its format holds and nothing otherwise.  JSON's commas and line
 * breaks come from the stack of open containers; the table's text is
 * written as the walk says.
 */
#include <stdarg.h>
#include <stdio.h>

#include "emitter.h"
#include "escape.h"
#include "units.h"

void mf_emit_init(mf_emitter *e, mf_emit_format format, mf_sink *out)
{
    *e = (mf_emitter){ .format = format, .out = out };
}

/* ---- JSON -------------------------------------------------------------------- */

/* Before a member of the innermost container: the comma, the line break,
 * and "key": inside an object. */
static void member(mf_emitter *e, const char *key)
{
    if (e->depth > 0) {
        char *members = &e->level[e->depth - 1].members;
        if (*members)
            mf_sink_putc(e->out, ',');
        if (e->level[e->depth - 1].lines)
            mf_sink_putc(e->out, '\n');
        *members = 1;
    }
    if (key)
        mf_sink_printf(e->out, "\"%s\":", key);
}

static void open_container(mf_emitter *e, const char *key, char open, char close)
{
    if (!mf_emit_json(e))
        return;
    member(e, key);
    mf_sink_putc(e->out, open);
    if (e->depth < MF_EMIT_DEPTH)
        e->level[e->depth] = (mf_emit_level){ .close = close };
    e->depth++;
}

void mf_emit_begin(mf_emitter *e)
{
    open_container(e, NULL, '{', '}');
}

void mf_emit_end(mf_emitter *e)
{
    if (mf_emit_json(e) && e->depth == 1) {
        e->depth = 0;
        mf_sink_puts(e->out, "\n}\n");
    }
}

void mf_emit_object_begin(mf_emitter *e, const char *key)
{
    open_container(e, key, '{', '}');
}

void mf_emit_array_begin(mf_emitter *e, const char *key)
{
    open_container(e, key, '[', ']');
}

void mf_emit_close(mf_emitter *e)
{
    if (!mf_emit_json(e) || e->depth == 0)
        return;
    e->depth--;
    mf_sink_putc(e->out, e->depth < MF_EMIT_DEPTH ? e->level[e->depth].close : '}');
}

void mf_emit_lines(mf_emitter *e)
{
    if (mf_emit_json(e) && e->depth > 0 && e->depth <= MF_EMIT_DEPTH)
        e->level[e->depth - 1].lines = 1;
}

void mf_emit_json_u64(mf_emitter *e, const char *key, uint64_t v)
{
    if (!mf_emit_json(e))
        return;
    member(e, key);
    mf_sink_u64(e->out, v);
}

void mf_emit_json_i64(mf_emitter *e, const char *key, int64_t v)
{
    mf_emit_json_printf(e, key, "%lld", (long long)v);
}

void mf_emit_json_bool(mf_emitter *e, const char *key, int v)
{
    mf_emit_json_printf(e, key, "%s", v ? "true" : "false");
}

void mf_emit_json_double(mf_emitter *e, const char *key, double v)
{
    mf_emit_json_printf(e, key, "%.3f", v);
}

void mf_emit_json_str(mf_emitter *e, const char *key, const char *s)
{
    if (!mf_emit_json(e))
        return;
    member(e, key);
    if (!s) {
        mf_sink_puts(e->out, "null");
        return;
    }
    mf_sink_putc(e->out, '"');
    mf_escape_json(e->out, s);
    mf_sink_putc(e->out, '"');
}

void mf_emit_json_printf(mf_emitter *e, const char *key, const char *fmt, ...)
{
    if (!mf_emit_json(e))
        return;
    member(e, key);
    va_list ap;
    va_start(ap, fmt);
    mf_sink_vprintf(e->out, fmt, ap);
    va_end(ap);
}

/* ---- the table --------------------------------------------------------------- */

void mf_emit_table_printf(mf_emitter *e, const char *fmt, ...)
{
    if (mf_emit_json(e))
        return;
    va_list ap;
    va_start(ap, fmt);
    mf_sink_vprintf(e->out, fmt, ap);
    va_end(ap);
}

void mf_emit_table_text(mf_emitter *e, const char *s)
{
    if (!mf_emit_json(e))
        mf_escape_text(e->out, s, MF_ESCAPE_WHOLE);
}

void mf_emit_table_title(mf_emitter *e, const char *title)
{
    mf_emit_table_printf(e, "%s\n=================\n", title);
}

void mf_emit_table_cell(mf_emitter *e, const char *s, size_t width)
{
    if (mf_emit_json(e))
        return;
    mf_sink probe = { 0 };
    mf_escape_text(&probe, s, MF_ESCAPE_WHOLE);
    size_t chars = 0;
    for (size_t i = 0; i < probe.len; i++)
        chars += ((unsigned char)probe.buf[i] & 0xc0) != 0x80;
    mf_sink_write(e->out, probe.buf, probe.len);
    mf_sink_free(&probe);
    for (; chars < width; chars++)
        mf_sink_putc(e->out, ' ');
    mf_sink_putc(e->out, ' ');
}

void mf_emit_table_bytes(mf_emitter *e, uint64_t bytes, int width)
{
    char b[32];
    mf_emit_table_printf(e, " %*s", width, mf_format_bytes(bytes, b, sizeof b));
}

/* ---- both -------------------------------------------------------------------- */

void mf_emit_u64(mf_emitter *e, const char *key, const char *table_fmt, uint64_t v)
{
    mf_emit_json_u64(e, key, v);
    mf_emit_table_printf(e, table_fmt, (unsigned long long)v);
}

void mf_emit_bytes(mf_emitter *e, const char *key, uint64_t bytes, int width)
{
    mf_emit_json_u64(e, key, bytes);
    mf_emit_table_bytes(e, bytes, width);
}

void mf_emit_name(mf_emitter *e, const char *key, const char *table_fmt, const char *s)
{
    mf_emit_json_str(e, key, s);
    mf_emit_table_printf(e, table_fmt, s);
}

void mf_emit_text(mf_emitter *e, const char *key, const char *s, size_t width)
{
    mf_emit_json_str(e, key, s);
    if (width)
        mf_emit_table_cell(e, s, width);
    else
        mf_emit_table_text(e, s);
}
