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
 * memflow run creates (mf_stage_create, cli/stage_drain.h: memflow run's
 * side, compiled into the memflow program) and hands to the process it
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

#endif /* MEMFLOW_STAGE_H */
