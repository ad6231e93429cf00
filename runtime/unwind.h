/*
 * unwind.h - the recorder's own walk of the calling thread's stack, for
 * call stacks at every allocation (stacks.c), on x86-64.
 *
 * libunwind's unw_backtrace costs ~55 ns before its first frame (context,
 * cursor) and a cache lookup per frame; at every allocation that is most of
 * what `--stacks` costs.  Most consecutive allocations come from the same
 * outer frames, so this walker remembers each thread's last walk - every
 * frame's return address, stack pointer and the stack words the walk read
 * - and walks only down to the first frame whose state is the same as in
 * the last walk and whose remembered words still hold what they held: from
 * there on, the walk would read the same words and compute the same frames
 * (it is a pure function of them), so the rest is taken from the memo.
 *
 * Frames are walked with their DWARF call-frame information (.eh_frame,
 * found through PT_GNU_EH_FRAME), the same that libunwind reads, reduced to
 * the rules compiled code uses: the canonical frame address is rsp or rbp
 * plus an offset, the return address and rbp are saved at offsets from it
 * or rbp is unchanged.  Anything else - an expression, another register, a
 * signal frame, code without call-frame information, a stack word outside
 * the stack - makes the walk give up, and the caller uses libunwind for
 * that allocation.  Nothing here calls malloc.
 */
#ifndef MEMFLOW_UNWIND_H
#define MEMFLOW_UNWIND_H

#include <stdint.h>

#define MF_UNWIND_FRAMES 353    /* frames of a walk: this one + MF_STACKS_RAW_MAX */

/* One frame of a thread's last walk. */
typedef struct mf_unwind_frame {
    uint64_t ip;                /* return address (frame 0: where the walk began) */
    uint64_t sp;                /* rsp in this frame (the callee's CFA) */
    uint64_t bp;                /* rbp in this frame */
    uint64_t ra_slot;           /* where its caller's return address was read */
    uint64_t bp_slot;           /* where its caller's rbp was read; 0: rbp unchanged */
    uint32_t uses_bp;           /* its CFA is rbp + offset */
    uint32_t reserved;
} mf_unwind_frame;

/* A thread's last walk (in its state, mmap'd: pages are touched as used). */
typedef struct mf_unwind_memo {
    uint32_t n;                 /* frames; 0: none */
    uint32_t gen;               /* code generation it was walked in */
    uint32_t ended;             /* the last frame ended the stack (else: max reached) */
    uint32_t stack_id;          /* the caller's id for the whole walk; 0: none */
    uint32_t stack_gen;         /* the caller's: which log the id is good for */
    uint32_t stack_skip;        /* the caller's: frames it dropped */
    uint32_t bp_matters;        /* some frame's CFA is rbp + offset */
    uint64_t max;               /* the frame limit of that walk */
    mf_unwind_frame frame[MF_UNWIND_FRAMES];
} mf_unwind_memo;

/*
 * Walk the calling thread's stack from the caller of this function: up to
 * max return addresses into ips (ips[0]: the return address into the
 * caller).  Returns the count, or -1 when this walker cannot (the caller
 * then walks with libunwind).  *same is set when the whole walk is the same
 * as the memo's, with the same max: memo->stack_* are then the caller's as
 * it left them, and ips is NOT filled (mf_unwind_memo_ips fills it);
 * otherwise memo->stack_* are zeroed.  Call inside MF_INTERNAL_BEGIN/END.
 */
int mf_unwind_walk(mf_unwind_memo *memo, uint64_t *ips, int max, int *same);

/* The return addresses of the memo's walk into ips (as mf_unwind_walk
 * gives them); their count. */
int mf_unwind_memo_ips(const mf_unwind_memo *memo, uint64_t *ips);

/*
 * Code was unloaded (dlclose): every cached frame description and memo is
 * stale.  Cheap; call after the unload.
 */
void mf_unwind_code_changed(void);

#endif /* MEMFLOW_UNWIND_H */
