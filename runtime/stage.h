/*
 * stage.h - the staging area: under `memflow run` (unless MEMFLOW_STAGE=0)
 * the program's threads write their log chunks into slots of a file shared
 * with memflow run, which copies each full chunk into the log file on its
 * own core.
 *
 * Why: a thread that writes its chunks straight into a shared mapping of
 * the log file pays the kernel for every 4 KiB page of log (page-cache
 * allocation, page_mkwrite, mapping, unmapping: ~4 us a page on ext4, about
 * two thirds of what recording cost).  A staging slot is mapped once and
 * reused; the copy into the page cache (pwrite) is memflow run's work.
 *
 * The area is a file in the output folder, memflow-RUNID.stage, that
 * memflow run creates (mf_stage_create) and hands to the process it
 * starts, and to that process only: its descriptor and identity go in
 * MEMFLOW_STAGE, and the child marks the area as its own
 * (mf_stage_child_owns) just before exec.  The first image of that process
 * to open a log adopts it (mf_stage_adopt); a forked child, a process of
 * another pid, or a later image after exec writes its log directly as
 * before.  A program run without memflow run never sees a stage.
 *
 * Slots are MF_CHUNK_SIZE bytes, each the image of one log chunk (chunk
 * header, records with their word stored last).  A slot is FREE, FILLING
 * (a thread writes it), FULL (waiting to be copied) or WRITING (being
 * copied).  The log file's chunk is claimed (numbered, its disk space
 * reserved) exactly as for a direct chunk before a slot is filled, so a
 * full disk or a file size limit still drops events at the claim.
 *
 * Nothing recorded is lost, whoever dies: a record is in the page cache of
 * the stage file the moment its word is stored, as it would be in the
 * log's.  When the program dies memflow run writes every slot's recorded
 * prefix into the log (mf_stage_drain final) and removes the file.  If
 * memflow run goes away first, the program writes its slots itself (it
 * checks at every full chunk), and at exit, exec, _exit and memflow_dump
 * it writes whatever it holds (mf_stage_flush).  If both are killed at
 * once (an OOM kill of the container, kill -9 of the process group), the
 * file stays, and the next reader of the folder writes its slots into the
 * log (mf_stage_recover) - only once nobody holds the file's lock, only
 * into the very log (device, inode, run id) the program named.
 */
#ifndef MEMFLOW_STAGE_H
#define MEMFLOW_STAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "run_id.h"

#define MF_STAGE_SLOTS 32u           /* 32 MiB of address space; pages on use */
#define MF_STAGE_SUFFIX ".stage"     /* memflow-RUNID.stage in the output folder */

/* ---- the program's side (libmemflow internals) ----------------------- */

/*
 * Adopt the stage MEMFLOW_STAGE names, once per process and only in the
 * process memflow run marked: maps it, closes the inherited descriptor
 * (the mapping keeps the file and its lock) and records which log the
 * slots belong to (path, device, inode, the run id of its header).
 * Returns 1 when chunks go through the stage from now on, 0 when there is
 * none (the log is written directly).  Call with the log just opened.
 */
int mf_stage_adopt(const char *log_path, dev_t log_dev, ino_t log_ino,
                   const uint8_t run_id[MF_RUN_ID_BYTES]);

/* Whether a stage is in use by this process. */
int mf_stage_active(void);

/*
 * A slot for chunk `index` of the log, owned by thread tid: its chunk
 * header written, its pages mapped.  When every slot is taken, one that is
 * full is written to log_fd here and reused.  NULL when none can be had
 * (the caller then maps the file's chunk directly).
 */
char *mf_stage_take(uint32_t index, uint32_t tid, int log_fd);

/* Whether memflow run has reserved chunk index's disk space already. */
int mf_stage_reserved(uint64_t index);

/* Whether chunk (a chunk's first byte) is a slot of the stage. */
int mf_stage_owns(const char *chunk);

/*
 * The thread is done with the slot at chunk: `used` bytes hold records.
 * It becomes FULL for memflow run to copy; if memflow run is gone, it is
 * written to log_fd here.
 */
void mf_stage_full(char *chunk, size_t used, int log_fd);

/*
 * Write to log_fd every full slot and the recorded prefix of every slot
 * still being filled, so that the file holds every record stored so far
 * (exit, exec, _exit, memflow_dump).  Other threads may go on recording.
 */
void mf_stage_flush(int log_fd);

/* In a forked child: the parent's stage is not the child's; unmap it. */
void mf_stage_forget(void);

/* ---- memflow run's side (runtime/stage_run.c, in the memflow program) -- */

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

/* Whether the program claimed chunks between the last two drains (or has
 * not opened its log yet): it is recording, slots will fill. */
int mf_stage_busy(mf_stage *s);

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

#endif /* MEMFLOW_STAGE_H */
