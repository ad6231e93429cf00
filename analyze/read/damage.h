/*
 * damage.h - what is wrong with a log, as the reader found it: messages
 * "FILE: offset N: what", in the order found, the first of them kept as
 * the log's damage.  The reader never stops at damage it can read past; it
 * keeps everything that can still be trusted and lists what it could not.
 */
#ifndef MEMFLOW_DAMAGE_H
#define MEMFLOW_DAMAGE_H

#include <stddef.h>
#include <stdint.h>

#define MF_DAMAGE_KEPT 32        /* messages kept; later ones are counted */

typedef struct mf_damage {
    char *lines[MF_DAMAGE_KEPT];
    size_t n;
    uint64_t more;               /* messages past MF_DAMAGE_KEPT */
} mf_damage;

/* Add "path: offset N: what".  Out of memory loses the message, not the count. */
void mf_damage_add(mf_damage *d, const char *path, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Add a message already made "path: offset N: what" (another list's). */
void mf_damage_add_line(mf_damage *d, const char *line);

/* The first message, or "" when there is none. */
const char *mf_damage_first(const mf_damage *d);

void mf_damage_free(mf_damage *d);

#endif /* MEMFLOW_DAMAGE_H */
