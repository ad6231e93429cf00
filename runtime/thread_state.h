/*
 * thread_state.h - what the recorder keeps per thread: the cursor into the
 * thread's chunk of the log and the thread's scope stack.
 *
 * Reached through one initial-exec TLS pointer; the block itself is mmap'd
 * on the thread's first event and recycled when the thread exits.
 */
#ifndef MEMFLOW_THREAD_STATE_H
#define MEMFLOW_THREAD_STATE_H

#include <stdint.h>

#include "stacks.h"

#define MF_SCOPE_DEPTH 256

typedef struct mf_thread_state {
    char *cursor;                 /* next free byte in the chunk */
    char *limit;                  /* end of the chunk */
    uint32_t tid;
    uint32_t depth;               /* index of the current scope in stack */
    uint32_t overflow;            /* pushes beyond MF_SCOPE_DEPTH, popped first */
    uint32_t named;               /* the THREAD record was written to this log */
    uint64_t time_base;           /* time of the chunk's last TIME/compact record */
    uint32_t has_base;            /* this chunk has a time base */
    uint32_t reserved;
    struct mf_thread_state *next_free;
    uint32_t stack[MF_SCOPE_DEPTH];
    void *python;                 /* the thread's Python shadow stack (Python stacks
                                     on: python/pystacks.c), or NULL */
    mf_unwind_memo unwind;        /* the last call stack walked (stacks on) */
} mf_thread_state;

/* The calling thread's state, created on first use (NULL if out of memory). */
mf_thread_state *mf_thread_state_get(void);

/*
 * Reserve `size` bytes for a record in the calling thread's chunk, claiming
 * a new chunk when full.  Returns NULL if the log is closed or cannot grow.
 */
void *mf_thread_reserve(mf_thread_state *t, uint32_t size);

/*
 * Publish a record reserved with mf_thread_reserve (at t->cursor): a zero
 * word after it first, then its word, last.  The zero word ends the chunk's
 * records for any reader: a staging slot is reused without being cleared,
 * and what lies past the zero is an older chunk's.
 */
static inline void mf_thread_commit(mf_thread_state *t, void *rec, uint64_t word)
{
    char *next = (char *)rec + ((word >> 16) & 0xffffu);
    if (next + sizeof(uint64_t) <= t->limit)
        *(uint64_t *)(void *)next = 0;
    __atomic_store_n((uint64_t *)rec, word, __ATOMIC_RELEASE);
    t->cursor = next;
    /* Records stream into memory not touched for a while: ask for the line
     * a few records ahead now, for writing (prefetchw: owned, so the
     * stores then need no second trip), so the stores do not wait for it.
     * Prefetching past the chunk's end is harmless (a hint never faults);
     * processors without prefetchw treat it as a no-op. */
#if defined(__x86_64__)
    __asm__("prefetchw %0" : : "m"(*(const char *)(t->cursor + 512)));
#else
    __builtin_prefetch(t->cursor + 512, 1, 3);
#endif
}

/* Write a SCOPE record (push/pop) for the calling thread. */
void mf_recorder_scope_event(mf_thread_state *t, uint32_t scope, unsigned op);

#endif
