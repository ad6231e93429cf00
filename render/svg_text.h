/*
 * svg_text.h - text helpers of the memory_flow renderer (render/svg*.c):
 * a growable byte buffer, XML escaping of strings from the profiled program,
 * cleaning strings for Cairo's text API, and human units for bytes and time.
 *
 * Data flow: the model's strings (scopes, names, thread names) pass through
 * mf_svg_xml_escape on their way into the SVG hover overlay, and through
 * mf_svg_clean_text on their way into Cairo (legend, title), so invalid
 * UTF-8 or control characters can neither break the XML nor put Cairo into
 * an error state.
 */
#ifndef MEMFLOW_SVG_TEXT_H
#define MEMFLOW_SVG_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer; zero-initialise.  failed is set on out of memory
 * and every later append is then a no-op. */
typedef struct mf_svg_buf {
    char *data;
    size_t len, cap;
    int failed;
} mf_svg_buf;

/* Append n bytes.  Returns 0, or -1 (and sets failed) on out of memory. */
int mf_svg_buf_append(mf_svg_buf *buf, const char *bytes, size_t n);

/* Append printf-formatted text.  Returns 0 or -1 as mf_svg_buf_append. */
int mf_svg_buf_printf(mf_svg_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Release the buffer's memory and zero it. */
void mf_svg_buf_free(mf_svg_buf *buf);

/*
 * Append text escaped for XML character data and attribute values:
 * & < > " become entities; invalid UTF-8 bytes and characters XML forbids
 * become U+FFFD; control characters are shown as \n, \t or \xNN.  At most
 * max_chars characters of text are used; longer text ends with "...".
 */
void mf_svg_xml_escape(mf_svg_buf *buf, const char *text, size_t max_chars);

/*
 * Copy text into out (outlen bytes, NUL-terminated) as valid UTF-8 that
 * Cairo accepts: invalid bytes become U+FFFD, control characters \n, \t or
 * \xNN; at most max_chars characters, longer text ends with "...".
 * Returns out.
 */
char *mf_svg_clean_text(const char *text, size_t max_chars, char *out, size_t outlen);

/* "512 B", "5.00 KiB", "12.3 MiB", "1.50 GiB" into out; returns out. */
char *mf_svg_format_bytes(uint64_t bytes, char *out, size_t outlen);

/* "0", "850 ns", "12.5 us", "1.23 ms", "4.56 s" into out; returns out. */
char *mf_svg_format_time(uint64_t ns, char *out, size_t outlen);

/* A count with thousands separators: "1,234,567" into out; returns out. */
char *mf_svg_format_count(uint64_t count, char *out, size_t outlen);

#endif /* MEMFLOW_SVG_TEXT_H */
