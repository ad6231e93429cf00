/*
 * escape.h - make strings from the profiled program safe for each output.
 *
 * Scope names, allocation names, thread names and kernel names come from the
 * program and may hold anything: `<"&`, newlines, control bytes, invalid
 * UTF-8.  Every writer in render/ (svg, trace, stats, csv) passes them
 * through one of these functions.  Common rules:
 *  - valid UTF-8 sequences are kept as they are;
 *  - every byte that does not start a valid UTF-8 sequence (bad lead byte,
 *    truncated or overlong sequence, surrogate, > U+10FFFF) becomes U+FFFD;
 *  - the functions write the field's content only, never the surrounding
 *    quotes or delimiters.
 * Each exists in two forms: into a FILE* (returns 0, or -1 on a write
 * error) and into a growable buffer (returns 0, or -1 when out of memory).
 */
#ifndef MEMFLOW_ESCAPE_H
#define MEMFLOW_ESCAPE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "compiler.h"

/* A growable, always NUL-terminated byte buffer. */
typedef struct mf_buf {
    char *data;      /* NULL until the first append */
    size_t len;      /* bytes used, without the NUL */
    size_t cap;
    int failed;      /* an append ran out of memory; data holds what fitted */
} mf_buf;

#define MF_BUF_INIT { NULL, 0, 0, 0 }

/* Append len bytes.  Returns 0, or -1 (and sets failed) when out of memory. */
MF_EXPORT int mf_buf_append(mf_buf *b, const char *bytes, size_t len);

/* Append a NUL-terminated string. */
MF_EXPORT int mf_buf_puts(mf_buf *b, const char *s);

/* Append printf-formatted text. */
MF_EXPORT int mf_buf_printf(mf_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
MF_EXPORT int mf_buf_vprintf(mf_buf *b, const char *fmt, va_list ap);

/* Hand the bytes over (the caller frees them; "" if empty, NULL if out of
 * memory) and reset b to empty. */
MF_EXPORT char *mf_buf_take(mf_buf *b);

/* Free the bytes and reset b to empty. */
MF_EXPORT void mf_buf_free(mf_buf *b);

/*
 * XML / SVG text and attribute values: & < > " ' become entities, tab,
 * newline and carriage return become &#9; &#10; &#13; (so they survive in
 * attributes), other control characters and the non-characters U+FFFE and
 * U+FFFF (not allowed in XML 1.0) become U+FFFD.
 */
MF_EXPORT int mf_escape_xml(FILE *f, const char *s);
MF_EXPORT int mf_escape_xml_buf(mf_buf *b, const char *s);

/*
 * JSON string content (RFC 8259): " and \ are backslash-escaped, control
 * characters become \n \t \r \b \f or \u00XX, invalid bytes become \ufffd.
 * The output is valid inside "...".
 */
MF_EXPORT int mf_escape_json(FILE *f, const char *s);
MF_EXPORT int mf_escape_json_buf(mf_buf *b, const char *s);

/*
 * CSV field content for a double-quoted field (RFC 4180, MXNet's CSV): a "
 * is doubled; newlines and other bytes stay (legal inside quotes); invalid
 * bytes become U+FFFD.
 */
MF_EXPORT int mf_escape_csv(FILE *f, const char *s);
MF_EXPORT int mf_escape_csv_buf(mf_buf *b, const char *s);

/*
 * Plain text for a terminal table: one line, nothing invisible.  Newline,
 * tab and carriage return become \n \t \r, a backslash stays, other control
 * characters become \xNN, invalid bytes become U+FFFD.
 */
MF_EXPORT int mf_escape_text(FILE *f, const char *s);
MF_EXPORT int mf_escape_text_buf(mf_buf *b, const char *s);

/*
 * Length of the valid UTF-8 sequence at s (1..4 bytes, at most n), or 0 if
 * the bytes there do not form one; *codepoint gets its value.
 */
MF_EXPORT size_t mf_utf8_decode(const unsigned char *s, size_t n, unsigned *codepoint);

#endif /* MEMFLOW_ESCAPE_H */
