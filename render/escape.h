/*
 * escape.h - strings from the profiled program made safe for each output,
 * by one set of rules.
 *
 * Scope names, block names, thread names, kernel names and the program's
 * arguments may hold anything: < " &, newlines, control bytes, invalid
 * UTF-8.  Every writer passes them through one of these functions into its
 * sink (sink.h):
 *  - valid UTF-8 is kept; a byte that does not start a valid sequence
 *    (bad lead byte, truncated or overlong sequence, surrogate, past
 *    U+10FFFF) becomes U+FFFD;
 *  - where a reader sees the text (a terminal table, a picture's labels and
 *    hover titles), a newline, tab and carriage return show as \n \t \r and
 *    other control characters as \xNN: one line, nothing invisible, the
 *    same in every output; U+FFFE and U+FFFF (which XML forbids) become
 *    U+FFFD;
 *  - XML adds its entities for & < > " ';
 *  - JSON keeps the text exact: JSON escapes for " \ and control characters;
 *  - CSV (MXNet's file, byte for byte) doubles ", keeps the rest.
 * The functions write the field's content only, never the quotes around it.
 */
#ifndef MEMFLOW_ESCAPE_H
#define MEMFLOW_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "sink.h"

#define MF_ESCAPE_WHOLE SIZE_MAX   /* max_chars: no limit */

/* Text for people (tables, labels): the rules above; at most max_chars
 * characters, then "..." if the text was longer.  Return 0, or -1 when the
 * sink has failed. */
MF_EXPORT int mf_escape_text(mf_sink *s, const char *text, size_t max_chars);

/* The same, XML-escaped, for SVG text and attribute values. */
MF_EXPORT int mf_escape_xml(mf_sink *s, const char *text, size_t max_chars);

/* JSON string content. */
MF_EXPORT int mf_escape_json(mf_sink *s, const char *text);

/* CSV field content inside double quotes. */
MF_EXPORT int mf_escape_csv(mf_sink *s, const char *text);

/*
 * mf_escape_text into out (outlen bytes, always NUL-terminated, only whole
 * characters), for Cairo's text API; returns out.
 */
MF_EXPORT char *mf_clean_text(const char *text, size_t max_chars, char *out, size_t outlen);

/*
 * Length of the valid UTF-8 sequence at s (1..4 bytes, at most n), or 0 if
 * the bytes there do not form one; *codepoint gets its value.
 */
MF_EXPORT size_t mf_utf8_decode(const unsigned char *s, size_t n, unsigned *codepoint);

#endif /* MEMFLOW_ESCAPE_H */
