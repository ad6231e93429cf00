/*
 * pywalk.h - the calling thread's Python frames read at an allocation
 * without a profile function (CPython 3.11; pywalk.c says how and why).
 */
#ifndef MEMFLOW_PYWALK_H
#define MEMFLOW_PYWALK_H

#include <stddef.h>
#include <stdint.h>

/* 1 when the running interpreter is one the walker reads (CPython 3.11, and
 * the extension was built against 3.11 headers). */
int mf_pywalk_available(void);

/*
 * The calling thread's Python frames, innermost first, as stack entries
 * (mf_stack_frame_entry) into out (at most max), group[i] the eval loop
 * call that runs frame i (0 = the innermost call); memflow's own frames
 * left out.  *state is the thread's cache (created on first use).  When the
 * frames are those of the last walk, *same is set and the return value is
 * the stack id mf_pywalk_remember stored for it.  Safe inside malloc,
 * without the GIL.
 */
uint32_t mf_pywalk(void **state, uint64_t *out, uint32_t *group, uint32_t max, int *same);

/* The stack id of the last walk, for *same next time. */
void mf_pywalk_remember(void *state, uint32_t id);

/* Whether a Python file is memflow's own (its frames are left out). */
int mf_pystacks_own_file(const char *path, size_t len);

#endif /* MEMFLOW_PYWALK_H */
