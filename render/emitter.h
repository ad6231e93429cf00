/*
 * emitter.h - one walk, two formats: the statistics (stats_sections.c) walk
 * their sections once and say what each value is; an emitter set to the
 * text table or to JSON writes what belongs to its format and skips the
 * rest, as jemalloc's emitter does for its stats.
 *
 * Three kinds of calls:
 *  - structure, for JSON: the document, objects and arrays (with their key
 *    inside an object, NULL inside an array); commas are the emitter's; a
 *    container set to mf_emit_lines() starts each later member on a new
 *    line.  A table ignores them.
 *  - mf_emit_json_*: a value only the JSON holds.  mf_emit_table_*: text
 *    only the table shows (titles, column heads, padding, other units).
 *  - mf_emit_u64, _bytes, _name, _text: one value both show, under a JSON
 *    key and in the table's way (a printf format, a width).
 * Program strings are escaped for the format (escape.h): JSON keeps them
 * exact, the table makes them one visible line.
 */
#ifndef MEMFLOW_EMITTER_H
#define MEMFLOW_EMITTER_H

#include <stdint.h>

#include "sink.h"

typedef enum mf_emit_format { MF_EMIT_TABLE, MF_EMIT_JSON } mf_emit_format;

#define MF_EMIT_DEPTH 8      /* JSON containers open at once, the document included */

/* An open JSON container. */
typedef struct mf_emit_level {
    char close;              /* '}' or ']' */
    char lines;              /* each later member on a new line */
    char members;            /* a member written (a comma before the next) */
} mf_emit_level;

typedef struct mf_emitter {
    mf_emit_format format;
    mf_sink *out;
    int depth;               /* JSON containers open */
    mf_emit_level level[MF_EMIT_DEPTH];
} mf_emitter;

/* An emitter of format writing into out. */
void mf_emit_init(mf_emitter *e, mf_emit_format format, mf_sink *out);

/* Whether e writes JSON (for what differs beyond values, such as how many
 * rows a table lists). */
static inline int mf_emit_json(const mf_emitter *e)
{
    return e->format == MF_EMIT_JSON;
}

/* ---- structure (JSON only) ---- */

/* The document: one object, closed by mf_emit_end on a line of its own,
 * then a newline. */
void mf_emit_begin(mf_emitter *e);
void mf_emit_end(mf_emitter *e);
void mf_emit_object_begin(mf_emitter *e, const char *key);
void mf_emit_array_begin(mf_emitter *e, const char *key);
/* Close the innermost object or array. */
void mf_emit_close(mf_emitter *e);
/* From here on, each member of the innermost container starts a line. */
void mf_emit_lines(mf_emitter *e);

/* ---- JSON values ---- */

void mf_emit_json_u64(mf_emitter *e, const char *key, uint64_t v);
void mf_emit_json_i64(mf_emitter *e, const char *key, int64_t v);
void mf_emit_json_bool(mf_emitter *e, const char *key, int v);
/* Three decimals. */
void mf_emit_json_double(mf_emitter *e, const char *key, double v);
/* A string (JSON-escaped), or null when s is NULL. */
void mf_emit_json_str(mf_emitter *e, const char *key, const char *s);
/* A value written as formatted (a number, null, or a string the caller
 * quotes: nothing is escaped). */
void mf_emit_json_printf(mf_emitter *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- table text ---- */

void mf_emit_table_printf(mf_emitter *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A program string, escaped for a terminal. */
void mf_emit_table_text(mf_emitter *e, const char *s);
/* A section's title, underlined. */
void mf_emit_table_title(mf_emitter *e, const char *title);
/* s escaped, padded to width characters, then a space. */
void mf_emit_table_cell(mf_emitter *e, const char *s, size_t width);
/* A size for people ("1.50 MiB") right-aligned in width columns after a
 * space. */
void mf_emit_table_bytes(mf_emitter *e, uint64_t bytes, int width);

/* ---- values both show ---- */

/* JSON: key:v; table: v through table_fmt (one %llu). */
void mf_emit_u64(mf_emitter *e, const char *key, const char *table_fmt, uint64_t v);
/* JSON: key:bytes; table: as mf_emit_table_bytes. */
void mf_emit_bytes(mf_emitter *e, const char *key, uint64_t bytes, int width);
/* A name memflow made (a device): JSON: key:"s"; table: s through
 * table_fmt (one %s). */
void mf_emit_name(mf_emitter *e, const char *key, const char *table_fmt, const char *s);
/* A program string: JSON: key:"s"; table: as mf_emit_table_cell with
 * width, or as mf_emit_table_text when width is 0. */
void mf_emit_text(mf_emitter *e, const char *key, const char *s, size_t width);

#endif /* MEMFLOW_EMITTER_H */
