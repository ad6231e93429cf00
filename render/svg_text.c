/*
 * svg_text.c - text helpers of the memory_flow renderer: byte buffer, XML
 * escaping and Cairo-safe cleaning of the profiled program's strings, and
 * human units.  See svg_text.h for the contracts.
 */
#include "svg_text.h"

#include "escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD in UTF-8 */

int mf_svg_buf_append(mf_svg_buf *buf, const char *bytes, size_t n)
{
    if (buf->failed)
        return -1;
    if (buf->len + n + 1 > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 4096;
        while (cap < buf->len + n + 1)
            cap *= 2;
        char *data = realloc(buf->data, cap);
        if (!data) {
            buf->failed = 1;
            return -1;
        }
        buf->data = data;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, bytes, n);
    buf->len += n;
    buf->data[buf->len] = '\0';
    return 0;
}

int mf_svg_buf_printf(mf_svg_buf *buf, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t)n < sizeof small)
        return mf_svg_buf_append(buf, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) {
        buf->failed = 1;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = mf_svg_buf_append(buf, big, (size_t)n);
    free(big);
    return rc;
}

void mf_svg_buf_free(mf_svg_buf *buf)
{
    free(buf->data);
    memset(buf, 0, sizeof *buf);
}

/*
 * Length of the valid UTF-8 character at s (1..4), or 0 if the bytes there
 * are not one (escape.c decides) or are U+FFFE/U+FFFF, which XML forbids.
 */
static size_t utf8_valid_length(const unsigned char *s)
{
    unsigned codepoint = 0;
    size_t len = mf_utf8_decode(s, strnlen((const char *)s, 4), &codepoint);
    if (codepoint == 0xfffe || codepoint == 0xffff)
        return 0;
    return len;
}

/*
 * The shared walk of both cleaners: calls emit(piece, n) for each safe
 * piece of text (a valid character, an entity when xml is set, an escape
 * sequence for a control character, or U+FFFD), at most max_chars
 * characters, then "..." if text was longer.
 */
typedef void (*emit_fn)(void *ctx, const char *piece, size_t n);

static void walk_text(const char *text, size_t max_chars, int xml, emit_fn emit, void *ctx)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t chars = 0;
    while (*s) {
        if (chars == max_chars) {
            emit(ctx, "...", 3);
            return;
        }
        chars++;
        unsigned c = *s;
        if (c < 0x20 || c == 0x7f) {
            char esc[8];
            if (c == '\n')
                emit(ctx, "\\n", 2);
            else if (c == '\t')
                emit(ctx, "\\t", 2);
            else
                emit(ctx, esc, (size_t)snprintf(esc, sizeof esc, "\\x%02x", c));
            s++;
            continue;
        }
        if (xml && (c == '&' || c == '<' || c == '>' || c == '"')) {
            const char *entity = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : "&quot;";
            emit(ctx, entity, strlen(entity));
            s++;
            continue;
        }
        size_t len = utf8_valid_length(s);
        if (len == 0) {
            emit(ctx, REPLACEMENT, 3);
            s++;
            continue;
        }
        emit(ctx, (const char *)s, len);
        s += len;
    }
}

static void emit_to_buf(void *ctx, const char *piece, size_t n)
{
    mf_svg_buf_append(ctx, piece, n);
}

void mf_svg_xml_escape(mf_svg_buf *buf, const char *text, size_t max_chars)
{
    walk_text(text, max_chars, 1, emit_to_buf, buf);
}

typedef struct fixed_out {
    char *out;
    size_t len, cap;
    int full;
} fixed_out;

/* Append a piece only if it fits whole, so no character is cut in half. */
static void emit_to_fixed(void *ctx, const char *piece, size_t n)
{
    fixed_out *f = ctx;
    if (f->full || f->len + n + 1 > f->cap) {
        f->full = 1;
        return;
    }
    memcpy(f->out + f->len, piece, n);
    f->len += n;
    f->out[f->len] = '\0';
}

char *mf_svg_clean_text(const char *text, size_t max_chars, char *out, size_t outlen)
{
    fixed_out f = { out, 0, outlen, 0 };
    if (outlen == 0)
        return out;
    out[0] = '\0';
    walk_text(text, max_chars, 0, emit_to_fixed, &f);
    return out;
}

/* value with 3 significant digits (at most 2 decimals) and its unit. */
static char *format_scaled(double value, const char *unit, char *out, size_t outlen)
{
    int decimals = value < 10 ? 2 : value < 100 ? 1 : 0;
    snprintf(out, outlen, "%.*f %s", decimals, value, unit);
    return out;
}

char *mf_svg_format_bytes(uint64_t bytes, char *out, size_t outlen)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(out, outlen, "%llu B", (unsigned long long)bytes);
        return out;
    }
    double value = (double)bytes / 1024.0;
    size_t unit = 0;
    while (value >= 999.5 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    return format_scaled(value, units[unit], out, outlen);
}

char *mf_svg_format_time(uint64_t ns, char *out, size_t outlen)
{
    if (ns == 0) {
        snprintf(out, outlen, "0");
        return out;
    }
    if (ns < 1000) {
        snprintf(out, outlen, "%llu ns", (unsigned long long)ns);
        return out;
    }
    if (ns < 999995ull)
        return format_scaled((double)ns / 1e3, "us", out, outlen);
    if (ns < 999995000ull)
        return format_scaled((double)ns / 1e6, "ms", out, outlen);
    return format_scaled((double)ns / 1e9, "s", out, outlen);
}

char *mf_svg_format_count(uint64_t count, char *out, size_t outlen)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)count);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < outlen; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = '\0';
    return out;
}
