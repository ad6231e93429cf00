/*
 * escape.c - escaping of program strings for XML/SVG, JSON, CSV and text
 * tables, and the growable buffer the in-memory forms write into.
 *
 * One loop (escape_with) walks the string as UTF-8 and hands each valid
 * code point, or U+FFFD for each invalid byte, to a per-format function
 * that writes its escaped form to a sink (a FILE* or an mf_buf).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

#define REPLACEMENT_UTF8 "\xef\xbf\xbd" /* U+FFFD */

/* ---- growable buffer --------------------------------------------------- */

static int buf_reserve(mf_buf *b, size_t extra)
{
    if (b->failed)
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int mf_buf_append(mf_buf *b, const char *bytes, size_t len)
{
    if (buf_reserve(b, len) < 0)
        return -1;
    memcpy(b->data + b->len, bytes, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

int mf_buf_puts(mf_buf *b, const char *s)
{
    return mf_buf_append(b, s, strlen(s));
}

int mf_buf_vprintf(mf_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0 || buf_reserve(b, (size_t)n) < 0) {
        va_end(again);
        return -1;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    va_end(again);
    b->len += (size_t)n;
    return 0;
}

int mf_buf_printf(mf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = mf_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *mf_buf_take(mf_buf *b)
{
    char *p = b->failed ? NULL : b->data;
    if (!p && !b->failed)
        p = strdup("");
    if (b->failed)
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
    return p;
}

void mf_buf_free(mf_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

/* ---- UTF-8 ------------------------------------------------------------- */

size_t mf_utf8_decode(const unsigned char *s, size_t n, unsigned *codepoint)
{
    unsigned c = s[0];
    size_t len;
    unsigned cp, min;
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

/* ---- sinks ------------------------------------------------------------- */

typedef struct sink {
    FILE *file;
    mf_buf *buf;
    int failed;
} sink;

static void put(sink *k, const char *bytes, size_t len)
{
    if (k->failed || len == 0)
        return;
    if (k->file ? fwrite(bytes, 1, len, k->file) != len : mf_buf_append(k->buf, bytes, len) < 0)
        k->failed = 1;
}

static void put_str(sink *k, const char *s)
{
    put(k, s, strlen(s));
}

/*
 * Emits one unit: cp is the code point, bytes/len its UTF-8 form; an invalid
 * byte arrives as cp 0xFFFD with bytes = REPLACEMENT_UTF8.
 */
typedef void (*emit_fn)(sink *k, unsigned cp, const char *bytes, size_t len);

static int escape_with(sink *k, const char *s, emit_fn emit)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    while (n > 0 && !k->failed) {
        unsigned cp;
        size_t len = mf_utf8_decode(p, n, &cp);
        if (len == 0)
            emit(k, 0xfffd, REPLACEMENT_UTF8, 3), len = 1;
        else
            emit(k, cp, (const char *)p, len);
        p += len;
        n -= len;
    }
    return k->failed ? -1 : 0;
}

/* ---- formats ----------------------------------------------------------- */

static void emit_xml(sink *k, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '&': put_str(k, "&amp;"); return;
    case '<': put_str(k, "&lt;"); return;
    case '>': put_str(k, "&gt;"); return;
    case '"': put_str(k, "&quot;"); return;
    case '\'': put_str(k, "&#39;"); return;
    case '\t': put_str(k, "&#9;"); return;
    case '\n': put_str(k, "&#10;"); return;
    case '\r': put_str(k, "&#13;"); return;
    }
    if (cp < 0x20 || cp == 0xfffe || cp == 0xffff)
        put(k, REPLACEMENT_UTF8, 3);
    else
        put(k, bytes, len);
}

static void emit_json(sink *k, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '"': put_str(k, "\\\""); return;
    case '\\': put_str(k, "\\\\"); return;
    case '\n': put_str(k, "\\n"); return;
    case '\t': put_str(k, "\\t"); return;
    case '\r': put_str(k, "\\r"); return;
    case '\b': put_str(k, "\\b"); return;
    case '\f': put_str(k, "\\f"); return;
    }
    if (cp < 0x20 || cp == 0xfffd) {
        char u[8];
        snprintf(u, sizeof u, "\\u%04x", cp);
        put_str(k, u);
    } else {
        put(k, bytes, len);
    }
}

static void emit_csv(sink *k, unsigned cp, const char *bytes, size_t len)
{
    if (cp == '"')
        put_str(k, "\"\"");
    else
        put(k, bytes, len);
}

static void emit_text(sink *k, unsigned cp, const char *bytes, size_t len)
{
    switch (cp) {
    case '\n': put_str(k, "\\n"); return;
    case '\t': put_str(k, "\\t"); return;
    case '\r': put_str(k, "\\r"); return;
    }
    if (cp < 0x20 || cp == 0x7f) {
        char x[8];
        snprintf(x, sizeof x, "\\x%02x", cp);
        put_str(k, x);
    } else {
        put(k, bytes, len);
    }
}

#define ESCAPE_PAIR(fmt)                                     \
    int mf_escape_##fmt(FILE *f, const char *s)              \
    {                                                        \
        sink k = { f, NULL, 0 };                             \
        return escape_with(&k, s, emit_##fmt);               \
    }                                                        \
    int mf_escape_##fmt##_buf(mf_buf *b, const char *s)      \
    {                                                        \
        sink k = { NULL, b, 0 };                             \
        return escape_with(&k, s, emit_##fmt);               \
    }

ESCAPE_PAIR(xml)
ESCAPE_PAIR(json)
ESCAPE_PAIR(csv)
ESCAPE_PAIR(text)
