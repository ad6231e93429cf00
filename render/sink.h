/*
 * sink.h - the one way the outputs write text and bytes: a buffered sink
 * that writes to a file descriptor (an output file, stdout) or grows in
 * memory (an SVG that must be measured before it is written, the
 * statistics text `memflow serve` answers with), checks every write and
 * counts the bytes.  The first failure (a full disk, EFBIG, out of memory)
 * is kept and every later write is skipped, so a writer checks once, at the
 * end.  The escaping of program strings (escape.h) writes into a sink too.
 */
#ifndef MEMFLOW_SINK_H
#define MEMFLOW_SINK_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"

typedef struct mf_sink {
    char *buf;               /* buffered bytes (memory sink: everything written) */
    size_t len, cap;
    int fd;                  /* to_fd: where the bytes go */
    int to_fd;               /* 0: a memory sink (so {0} is an empty memory sink) */
    int error;               /* errno of the first failure; 0 while all is well */
    uint64_t flushed;        /* bytes already written to fd */
} mf_sink;

/* A memory sink (grows as needed); the same as zero-initialising one. */
MF_EXPORT void mf_sink_memory(mf_sink *s);

/* A sink writing to fd (not owned: closing it is the caller's), buffered. */
MF_EXPORT void mf_sink_fd(mf_sink *s, int fd);

MF_EXPORT void mf_sink_write_slow(mf_sink *s, const void *bytes, size_t n);

/* Write n bytes (bytes may be NULL when n is 0). */
static inline void mf_sink_write(mf_sink *s, const void *bytes, size_t n)
{
    if (MF_UNLIKELY(n == 0))
        return;
    if (MF_LIKELY(s->cap - s->len >= n && !s->error)) {
        memcpy(s->buf + s->len, bytes, n);
        s->len += n;
        return;
    }
    mf_sink_write_slow(s, bytes, n);
}

static inline void mf_sink_puts(mf_sink *s, const char *text)
{
    mf_sink_write(s, text, strlen(text));
}

static inline void mf_sink_putc(mf_sink *s, char c)
{
    mf_sink_write(s, &c, 1);
}

/* printf-formatted text. */
MF_EXPORT void mf_sink_printf(mf_sink *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
MF_EXPORT void mf_sink_vprintf(mf_sink *s, const char *fmt, va_list ap);

/* An unsigned number in decimal (faster than printf). */
MF_EXPORT void mf_sink_u64(mf_sink *s, uint64_t v);

/* ns as exact microseconds with three decimals: 12345 -> "12.345". */
MF_EXPORT void mf_sink_micros(mf_sink *s, uint64_t ns);

/* Write what is buffered to the fd.  0, or -1 (errno in s->error). */
MF_EXPORT int mf_sink_flush(mf_sink *s);

/* Bytes written in all (flushed and buffered). */
static inline uint64_t mf_sink_bytes(const mf_sink *s)
{
    return s->flushed + s->len;
}

/* The memory sink's bytes, NUL-terminated, for the caller to free (NULL if
 * a write failed); the sink is empty afterwards. */
MF_EXPORT char *mf_sink_take(mf_sink *s);

/* Free the buffer (nothing is flushed). */
MF_EXPORT void mf_sink_free(mf_sink *s);

#endif /* MEMFLOW_SINK_H */
