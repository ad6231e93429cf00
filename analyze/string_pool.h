/*
 * string_pool.h - the one pool of texts of an analysis: every string a log
 * interns (scopes, block, thread, kernel and domain names) gets one id here,
 * the same for equal texts of any log, so the model counts a scope of
 * several processes as one.  Id 0 is "unknown" and id 1 "<unk>:" (the
 * log format's fixed ids).  The reader interns as it scans; the model and
 * the outputs only look texts up.  Texts live in large blocks (no malloc per
 * string) and stay where they are until the pool is freed.
 */
#ifndef MEMFLOW_STRING_POOL_H
#define MEMFLOW_STRING_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

typedef struct mf_strings mf_strings;

#define MF_STRINGS_FAILED UINT32_MAX   /* what intern returns when out of memory */

/* A new pool holding "unknown" (0) and "<unk>:" (1); NULL if out of memory. */
MF_EXPORT mf_strings *mf_strings_new(void);

MF_EXPORT void mf_strings_free(mf_strings *pool);

/*
 * The id of the len bytes at text (any bytes; a NUL inside ends the text),
 * added if new.  MF_STRINGS_FAILED when out of memory.
 */
MF_EXPORT uint32_t mf_strings_intern(mf_strings *pool, const char *text, size_t len);

/* The text of id, NUL-terminated; "unknown" for an id the pool lacks. */
MF_EXPORT const char *mf_strings_get(const mf_strings *pool, uint32_t id);

/* How many ids the pool has (ids are 0 .. count - 1). */
MF_EXPORT uint32_t mf_strings_count(const mf_strings *pool);

/*
 * Give id (a placeholder such as "?7" for a string a live log has not
 * written yet) its real text.  Two ids may then hold equal texts; that only
 * happens with a log read while it is written.  0, or -1 when out of memory.
 */
MF_EXPORT int mf_strings_replace(mf_strings *pool, uint32_t id, const char *text, size_t len);

#endif /* MEMFLOW_STRING_POOL_H */
