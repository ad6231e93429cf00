/*
 * sink.c - the buffered, checked output sink of sink.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sink.h"

#define FD_BUFFER (256u << 10)

void mf_sink_memory(mf_sink *s)
{
    *s = (mf_sink){ 0 };
}

void mf_sink_fd(mf_sink *s, int fd)
{
    *s = (mf_sink){ .fd = fd, .to_fd = 1 };
    if (!(s->buf = malloc(FD_BUFFER)))
        s->error = ENOMEM;
    else
        s->cap = FD_BUFFER;
}

int mf_sink_flush(mf_sink *s)
{
    if (!s->to_fd || s->error)
        return s->error ? -1 : 0;
    size_t done = 0;
    while (done < s->len) {
        ssize_t n = write(s->fd, s->buf + done, s->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->error = n < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)n;
    }
    s->flushed += s->len;
    s->len = 0;
    return 0;
}

/* Room for n more bytes in a memory sink. */
static int grow(mf_sink *s, size_t n)
{
    if (n > SIZE_MAX / 2 - s->len) {
        s->error = ENOMEM;
        return -1;
    }
    size_t cap = s->cap ? s->cap : 4096;
    while (cap - s->len < n + 1)
        cap *= 2;
    char *p = realloc(s->buf, cap);
    if (!p) {
        s->error = ENOMEM;
        return -1;
    }
    s->buf = p;
    s->cap = cap;
    return 0;
}

void mf_sink_write_slow(mf_sink *s, const void *bytes, size_t n)
{
    if (s->error)
        return;
    if (!s->to_fd) {
        if (grow(s, n) == 0) {
            memcpy(s->buf + s->len, bytes, n);
            s->len += n;
        }
        return;
    }
    if (mf_sink_flush(s) < 0)
        return;
    if (n >= s->cap) {        /* bigger than the buffer: straight through */
        const char *p = bytes;
        while (n > 0) {
            ssize_t w = write(s->fd, p, n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                s->error = w < 0 ? errno : EIO;
                return;
            }
            p += w;
            n -= (size_t)w;
            s->flushed += (size_t)w;
        }
        return;
    }
    memcpy(s->buf, bytes, n);
    s->len = n;
}

/* ---- printf ---------------------------------------------------------------------- */

/* The length modifier of a plain conversion: 0 (int), 'l' (long), 'L' (long
 * long), 'z' (size_t); *conv gets the conversion letter.  -1 for anything
 * the fast path does not take (flags, width, precision, floating point,
 * pointers, h, hh, j, t). */
static int plain_conversion(const char **p, char *conv)
{
    const char *q = *p;
    int len = 0;
    if (q[0] == 'l' && q[1] == 'l') {
        len = 'L';
        q += 2;
    } else if (*q == 'l' || *q == 'z') {
        len = *q++;
    }
    switch (*q) {
    case 'd': case 'i': case 'u': case 'x':
        break;
    case 's': case 'c': case '%':
        if (len)
            return -1;
        break;
    default:
        return -1;
    }
    *conv = *q;
    *p = q + 1;
    return len;
}

/* Whether every conversion of fmt is plain (see plain_conversion). */
static int plain_format(const char *fmt)
{
    for (const char *p = fmt; (p = strchr(p, '%'));) {
        char conv;
        p++;
        if (plain_conversion(&p, &conv) < 0)
            return 0;
    }
    return 1;
}

static void put_hex(mf_sink *s, uint64_t v)
{
    char digits[16];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    mf_sink_write(s, digits + sizeof digits - n, n);
}

static void put_signed(mf_sink *s, int64_t v)
{
    if (v < 0) {
        mf_sink_putc(s, '-');
        mf_sink_u64(s, (uint64_t)0 - (uint64_t)v);
    } else {
        mf_sink_u64(s, (uint64_t)v);
    }
}

/* printf of a plain format (plain_format(fmt)): the same bytes, without
 * the C library's general machinery (the outputs print many numbers). */
static void plain_printf(mf_sink *s, const char *fmt, va_list ap)
{
    const char *p = fmt;
    for (const char *pc; (pc = strchr(p, '%'));) {
        mf_sink_write(s, p, (size_t)(pc - p));
        p = pc + 1;
        char conv;
        int len = plain_conversion(&p, &conv);
        if (conv == '%') {
            mf_sink_putc(s, '%');
        } else if (conv == 's') {
            const char *text = va_arg(ap, const char *);
            mf_sink_puts(s, text ? text : "(null)");
        } else if (conv == 'c') {
            mf_sink_putc(s, (char)va_arg(ap, int));
        } else if (conv == 'd' || conv == 'i') {
            put_signed(s, len == 'L' ? va_arg(ap, long long)
                          : len == 'l' ? va_arg(ap, long)
                          : len == 'z' ? (int64_t)va_arg(ap, size_t)
                                       : va_arg(ap, int));
        } else {
            uint64_t v = len == 'L' ? va_arg(ap, unsigned long long)
                         : len == 'l' ? va_arg(ap, unsigned long)
                         : len == 'z' ? va_arg(ap, size_t)
                                      : va_arg(ap, unsigned);
            if (conv == 'x')
                put_hex(s, v);
            else
                mf_sink_u64(s, v);
        }
    }
    mf_sink_puts(s, p);
}

void mf_sink_vprintf(mf_sink *s, const char *fmt, va_list ap)
{
    if (plain_format(fmt)) {
        plain_printf(s, fmt, ap);
        return;
    }
    char small[256];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        s->error = s->error ? s->error : EINVAL;
    } else if ((size_t)n < sizeof small) {
        mf_sink_write(s, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) {
            s->error = s->error ? s->error : ENOMEM;
        } else {
            vsnprintf(big, (size_t)n + 1, fmt, again);
            mf_sink_write(s, big, (size_t)n);
            free(big);
        }
    }
    va_end(again);
}

void mf_sink_printf(mf_sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mf_sink_vprintf(s, fmt, ap);
    va_end(ap);
}

void mf_sink_u64(mf_sink *s, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    mf_sink_write(s, digits + sizeof digits - n, n);
}

void mf_sink_micros(mf_sink *s, uint64_t ns)
{
    char frac[4] = { '.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                     (char)('0' + ns % 10) };
    mf_sink_u64(s, ns / 1000);
    mf_sink_write(s, frac, 4);
}

char *mf_sink_take(mf_sink *s)
{
    char *p = NULL;
    if (!s->error && (s->buf || grow(s, 0) == 0) && (s->cap > s->len || grow(s, 1) == 0)) {
        s->buf[s->len] = 0;
        p = s->buf;
        s->buf = NULL;
    }
    mf_sink_free(s);
    return p;
}

void mf_sink_free(mf_sink *s)
{
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}
