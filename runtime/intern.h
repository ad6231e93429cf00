/*
 * intern.h - the string table of the recorder: scope names, allocation
 * names, thread names and kernel names become small integer ids.
 *
 * Ids are dense from 1 ("<unk>:"); 0 means unknown.  Storage comes from
 * mmap, never malloc, so interning is safe inside allocator hooks.  The
 * table is shared by all threads behind one mutex (interning is not on the
 * allocation hot path: scopes are interned when pushed).
 */
#ifndef MEMFLOW_INTERN_H
#define MEMFLOW_INTERN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Look text up, adding it if new.  *is_new is set to 1 when it was added.
 * Returns the id, or 0 when out of memory.
 */
uint32_t mf_intern_lookup(const char *text, size_t len, int *is_new);

/* The text and length of id (NULL for 0 or an unknown id). */
const char *mf_intern_text(uint32_t id, uint32_t *len);

/* How many ids exist (the largest id). */
uint32_t mf_intern_count(void);

/* The table's lock, held by the recorder while it writes string records
 * so that a string record is never missing from an open log. */
void mf_intern_lock(void);
void mf_intern_unlock(void);

/* After fork, in the child: the lock is reset to unlocked. */
void mf_intern_after_fork_child(void);

#endif
