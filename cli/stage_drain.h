/*
 * stage_drain.h - memflow run's side of the staging area, and a reader's
 * (cli/stage_drain.c): memflow run creates the staging file, hands it to the
 * program it starts and copies the program's full chunks into its log; a
 * reader of an output folder writes back what a killed run left staged.
 * The program's side is libmemflow's (runtime/stage.h tells the why and
 * the contract); the file's layout is common/stage_slots.h.
 */
#ifndef MEMFLOW_STAGE_DRAIN_H
#define MEMFLOW_STAGE_DRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "run_id.h"

typedef struct mf_stage mf_stage;

/*
 * Create a stage for the next process memflow run starts: the file
 * DIR/memflow-RUNID.stage (hex run id), new, its 32 MiB reserved on disk,
 * locked.  Returns NULL with a message in err when it cannot be had (it
 * exists, the disk is full, the file size limit is lower, no flock):
 * memflow run then runs without one.  env gets the value for MEMFLOW_STAGE.
 */
mf_stage *mf_stage_create(const char *dir, const uint8_t run_id[MF_RUN_ID_BYTES],
                          char *env, size_t envlen, char *err, size_t errlen);

/*
 * In the forked child, just before exec: the stage is this process's, and
 * its descriptor survives the exec.  Async-signal-safe.
 */
void mf_stage_child_owns(mf_stage *s);

/*
 * Copy full slots into the log, keep the log's disk space reserved a few
 * chunks ahead of the program's claims and the next slots' pages mapped
 * (final, for when the process is gone: every slot's recorded prefix, and
 * the file cut back to its claimed chunks).  Returns how many slots were
 * written, or -1 with a message in err when the log could not be written
 * (the slots stay for the program to write while it runs).
 */
int mf_stage_drain(mf_stage *s, int final, char *err, size_t errlen);

/*
 * Hand fn each chunk a drain copies from a full slot into the log: the
 * thread that filled it has claimed another, so no record is ever written
 * into it again and its bytes in the log are final.  Called on the drain's
 * thread right after the copy, with the log's descriptor (the drain's, only
 * for the call), the log's path as the program named it, and the chunk's
 * index; fn must not block.  Chunks the program writes itself (memflow run
 * was behind, or is gone) are not handed over.
 */
typedef void (*mf_stage_final_fn)(void *arg, int log_fd, const char *log_path, uint64_t index);
void mf_stage_on_final(mf_stage *s, mf_stage_final_fn fn, void *arg);

/* Whether the program claimed chunks between the last two drains (or has
 * not opened its log yet): it is recording, slots will fill. */
int mf_stage_busy(mf_stage *s);

/*
 * From now on each drain also writes what threads that fill their slots
 * slowly recorded (records of a slot that stopped growing, or that waited
 * 200 ms), so that a reader of the log sees them while the program runs.
 * 0, or -1 when out of memory.
 */
int mf_stage_write_idle(mf_stage *s);

/*
 * The earliest time a record still in the slots (not yet in the log, or
 * being copied there) may carry: per slot the time of its first event, or
 * when it was first seen taken if it has none yet, or when the drain last
 * wrote what it had recorded (mf_stage_write_idle) - records are stamped
 * after that, give or take the moment a thread takes between its time
 * stamp and its record; UINT64_MAX when every slot is free.
 * now_ns: CLOCK_MONOTONIC now, taken before the call.  For memflow run's
 * analysis during the run, which reads the log only up to there.
 */
uint64_t mf_stage_unwritten_since(mf_stage *s, uint64_t now_ns);

/*
 * Whether chunks may be copied from the stage into the file (dev, ino):
 * it is the log the program named, or the program has named none yet (the
 * log it opens names it just after).  A log copied into is read, while the
 * program runs, only up to each chunk's seal (reader.h mf_reader_add_log).
 */
int mf_stage_may_copy_into(mf_stage *s, uint64_t dev, uint64_t ino);

/* Sleep until mf_stage_wake or timeout_us pass (the program never wakes
 * memflow run: it looks for full slots as often as they come). */
void mf_stage_wait(mf_stage *s, int timeout_us);

/* Wake a thread sleeping in mf_stage_wait. */
void mf_stage_wake(mf_stage *s);

/* Unmap and close (after the final drain); the file is removed when that
 * drain wrote every slot, else kept for mf_stage_recover. */
void mf_stage_destroy(mf_stage *s);

/*
 * For a reader of an output folder: the stage file at path, if the run it
 * belongs to is over (nobody holds its lock: memflow run and the program
 * were killed together), has its slots written into the log they belong to
 * (the same file by device and inode, with the same run id) and is
 * removed.  Returns how many chunks were written (0: nothing was staged,
 * or the run is still going and will write them itself), with a message
 * in msg when it wrote any; -1 with a message when the file is not a
 * stage of this user or its log cannot take the records (the file is then
 * left as it is, so nothing is lost).
 */
int mf_stage_recover(const char *path, char *msg, size_t msglen);

#endif /* MEMFLOW_STAGE_DRAIN_H */
