/*
 * stacks.h - call stacks of allocations (`memflow run --stacks`, key
 * `stacks`), captured inside the profiled program.
 *
 * The recorder asks for the calling thread's stack at each allocation;
 * stacks.c unwinds it with libunwind (loaded with dlopen, RTLD_LOCAL, only
 * when stacks are on), drops memflow's own leading frames, and looks the
 * stack up in a table of distinct stacks kept in mmap'd memory.  A stack
 * seen for the first time gets the next id and a STACK record, preceded by
 * the MODULE records of the ELF modules its addresses fall in.  Lookups of
 * known stacks take no lock; adding one takes the table's lock.  Nothing
 * here calls malloc, and everything runs inside MF_INTERNAL_BEGIN/END so
 * allocations made by libunwind are not recorded.
 *
 * The table is bounded: MF_STACKS_MAX distinct stacks and MF_STACKS_ARENA
 * bytes of addresses.  When it is full, new stacks get id 0 ("none"), one
 * line goes to stderr and a NOTE MF_NOTE_STACKS_FULL records it; at the end
 * NOTE MF_NOTE_STACKS_LOST counts the allocations that lost their stack.
 */
#ifndef MEMFLOW_STACKS_H
#define MEMFLOW_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "log_format.h"
#include "unwind.h"

#ifndef MF_STACKS_MAX                        /* (a test builds a small table) */
#define MF_STACKS_MAX (1u << 20)             /* distinct stacks per process */
#endif
#define MF_STACKS_ARENA ((size_t)256 << 20)  /* bytes of stored stacks */
#define MF_STACKS_OWN_MAX 32                 /* memflow + unwinder frames above the caller */
#define MF_STACKS_SKIP_MAX 64
/* Room for what one walk returns: the frames kept, memflow's own, skipped. */
#define MF_STACKS_RAW_MAX (MF_STACK_MAX_DEPTH + MF_STACKS_OWN_MAX + MF_STACKS_SKIP_MAX)
_Static_assert(MF_STACKS_RAW_MAX + 1 <= MF_UNWIND_FRAMES, "a walk fits the memo");

/*
 * Load the unwinder (once) and capture up to `depth` frames from now on
 * (1..MF_STACK_MAX_DEPTH).  Returns 0, or -1 with a message in err when
 * libunwind cannot be loaded; stacks then stay off.
 */
int mf_stacks_enable(unsigned depth, char *err, size_t errlen);

/*
 * The id of the calling thread's current stack, writing its STACK record
 * (and the MODULE records it needs) the first time it is seen in this log.
 * Frames inside memflow's own libraries (and the unwinder) at the top of
 * the stack are dropped, then `skip` more.  ip[0] of the stored stack is
 * then the return address into the code that called memflow.  Returns 0
 * when stacks are not enabled, the stack is empty, or the table is full.
 * memo is the calling thread's last walk (unwind.h): walked with it, a
 * stack whose outer frames did not change costs only their check; with
 * NULL (or where that walker cannot), libunwind walks it all.  Must be
 * called with no record reserved in the calling thread's chunk.
 */
uint32_t mf_stacks_capture(mf_unwind_memo *memo, unsigned skip);

/*
 * The id of a stack composed by the caller: entries[0..depth) innermost
 * first, each a return address or a symbolic frame
 * (mf_stack_frame_entry(mf_frames_intern(...))); at most
 * MF_STACK_MAX_DEPTH are kept, the innermost.  Deduplicated with the
 * captured stacks by content; its STACK record (after the FRAME and MODULE
 * records it needs) is written the first time it is seen in this log.
 * Works whether or not native stacks are enabled.  0 for an empty stack or
 * a full table.  No record reserved in the calling thread's chunk.
 */
uint32_t mf_stacks_of(const uint64_t *entries, uint32_t depth);

/*
 * The calling thread's return addresses as mf_stacks_capture would store
 * them (memflow's own frames and `skip` more dropped, at most the enabled
 * depth), into out (MF_STACK_MAX_DEPTH entries), without storing them:
 * for a caller that composes a stack (Python frames merged in).  0 when
 * stacks are not enabled.
 */
uint32_t mf_stacks_walk(mf_unwind_memo *memo, unsigned skip, uint64_t *out);

/* A new log was opened (the first, or a forked child's): every stack and
 * module used from now on is written to it again. */
void mf_stacks_log_opened(void);

/* The log generation: changes when a new log opens. */
uint32_t mf_stacks_generation(void);

/* Allocations that lost their stack because the table was full (for the
 * NOTE written at the end). */
uint64_t mf_stacks_lost(void);

/* fork handlers: the table's lock is held across fork; reset in the child. */
void mf_stacks_lock(void);
void mf_stacks_unlock(void);
void mf_stacks_after_fork_child(void);

#endif /* MEMFLOW_STACKS_H */
