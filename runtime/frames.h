/*
 * frames.h - symbolic stack frames (FRAME records), interned inside the
 * profiled program.
 *
 * A symbolic frame is a frame known by name rather than by return address:
 * a Python function at a line (the Python capture), or a C/C++ frame a
 * PyTorch snapshot names.  Each distinct (function, file, line, kind) gets
 * a small id, dense from 1, and its FRAME record is written to the log
 * before the first STACK record that uses it (stacks.c asks for it when it
 * writes such a stack).  A STACK entry refers to it as
 * mf_stack_frame_entry(id) (log_format.h).
 *
 * Lookups of known frames take no lock (an open-addressing table of
 * pointers to entries in mmap'd memory, as stacks.c's); adding one takes the
 * table's lock.  Nothing here calls malloc.  The table is bounded
 * (MF_FRAMES_MAX): when full, new frames get id 0, which callers leave out.
 */
#ifndef MEMFLOW_FRAMES_H
#define MEMFLOW_FRAMES_H

#include <stdint.h>

#ifndef MF_FRAMES_MAX
#define MF_FRAMES_MAX (1u << 20)     /* distinct frames per process */
#endif

/*
 * The id of frame (function, file, line, kind): function and file are
 * string ids (mf_recorder_intern; file 0 = unknown), kind enum
 * mf_frame_kind.  Its FRAME record is written to the open log the first
 * time it is asked for in that log.  0 when the table is full or out of
 * memory.  Call it with no record reserved in the calling thread's chunk.
 */
uint32_t mf_frames_intern(uint32_t function, uint32_t file, uint32_t line, unsigned kind);

/* Make sure frame id's FRAME record is in the open log (stacks.c, before a
 * STACK record that uses it).  No record reserved. */
void mf_frames_ensure_written(uint32_t id);

/* A new log was opened: frames used from now on are written to it again. */
void mf_frames_log_opened(void);

/* fork handlers: the lock is held across fork, reset in the child. */
void mf_frames_lock(void);
void mf_frames_unlock(void);
void mf_frames_after_fork_child(void);

#endif /* MEMFLOW_FRAMES_H */
