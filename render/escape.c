/*
 * escape.c - escaping of program strings (see escape.h).
 *
 * One loop (walk) reads the string as UTF-8 and hands each code point - or
 * U+FFFD for each invalid byte - to the format's emitter, which writes its
 * escaped form through a `put` that goes into a sink or a fixed buffer.
 */
#include <stdio.h>
#include <string.h>

#include "escape.h"

#define REPLACEMENT "\xef\xbf\xbd"   /* U+FFFD */

typedef struct out {
    mf_sink *sink;           /* or, when NULL: */
    char *fixed;
    size_t len, cap;
    int full;
} out;

static void put(out *o, const char *piece, size_t n)
{
    if (o->sink) {
        mf_sink_write(o->sink, piece, n);
    } else if (!o->full && o->len + n < o->cap) {   /* whole pieces only */
        memcpy(o->fixed + o->len, piece, n);
        o->len += n;
        o->fixed[o->len] = 0;
    } else {
        o->full = 1;
    }
}

static void put_str(out *o, const char *s)
{
    put(o, s, strlen(s));
}

size_t mf_utf8_decode(const unsigned char *s, size_t n, unsigned *codepoint)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80) {
        *codepoint = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    *codepoint = cp;
    return len;
}

/* Emits one code point; bytes/len is its UTF-8 form (REPLACEMENT for an
 * invalid byte, whose cp is 0xfffd). */
typedef void (*emit_fn)(out *o, unsigned cp, const char *bytes, size_t len);

static void walk(out *o, const char *text, size_t max_chars, emit_fn emit)
{
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    size_t n = strlen((const char *)p), chars = 0;
    while (n > 0 && !o->full) {
        if (chars++ == max_chars) {
            put(o, "...", 3);
            return;
        }
        unsigned cp;
        size_t len = mf_utf8_decode(p, n, &cp);
        if (len == 0)
            emit(o, 0xfffd, REPLACEMENT, 3), len = 1;
        else
            emit(o, cp, (const char *)p, len);
        p += len;
        n -= len;
    }
}

/* The text rules: control characters visible, non-characters replaced. */
static void emit_text(out *o, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '\n': put(o, "\\n", 2); return;
    case '\t': put(o, "\\t", 2); return;
    case '\r': put(o, "\\r", 2); return;
    }
    if (cp < 0x20 || cp == 0x7f) {
        char x[8];
        put(o, x, (size_t)snprintf(x, sizeof x, "\\x%02x", cp));
    } else if (cp == 0xfffe || cp == 0xffff) {
        put(o, REPLACEMENT, 3);
    } else {
        put(o, bytes, len);
    }
}

static void emit_xml(out *o, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '&': put_str(o, "&amp;"); return;
    case '<': put_str(o, "&lt;"); return;
    case '>': put_str(o, "&gt;"); return;
    case '"': put_str(o, "&quot;"); return;
    case '\'': put_str(o, "&#39;"); return;
    }
    emit_text(o, cp, bytes, len);
}

static void emit_json(out *o, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '"': put(o, "\\\"", 2); return;
    case '\\': put(o, "\\\\", 2); return;
    case '\n': put(o, "\\n", 2); return;
    case '\t': put(o, "\\t", 2); return;
    case '\r': put(o, "\\r", 2); return;
    case '\b': put(o, "\\b", 2); return;
    case '\f': put(o, "\\f", 2); return;
    }
    if (cp < 0x20 || cp == 0xfffd) {
        char u[8];
        put(o, u, (size_t)snprintf(u, sizeof u, "\\u%04x", cp));
    } else {
        put(o, bytes, len);
    }
}

static void emit_csv(out *o, unsigned cp, const char *bytes, size_t len)
{
    if (cp == '"')
        put(o, "\"\"", 2);
    else
        put(o, bytes, len);
}

static int into(mf_sink *s, const char *text, size_t max_chars, emit_fn emit)
{
    out o = { .sink = s };
    walk(&o, text, max_chars, emit);
    return s->error ? -1 : 0;
}

int mf_escape_text(mf_sink *s, const char *text, size_t max_chars)
{
    return into(s, text, max_chars, emit_text);
}

int mf_escape_xml(mf_sink *s, const char *text, size_t max_chars)
{
    return into(s, text, max_chars, emit_xml);
}

int mf_escape_json(mf_sink *s, const char *text)
{
    return into(s, text, MF_ESCAPE_WHOLE, emit_json);
}

int mf_escape_csv(mf_sink *s, const char *text)
{
    return into(s, text, MF_ESCAPE_WHOLE, emit_csv);
}

char *mf_clean_text(const char *text, size_t max_chars, char *buf, size_t buflen)
{
    out o = { .fixed = buf, .cap = buflen };
    if (buflen == 0)
        return buf;
    buf[0] = 0;
    walk(&o, text, max_chars, emit_text);
    return buf;
}
