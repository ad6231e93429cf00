/*
 * stage_slots.h - the staging file's layout and the writing of its slots
 * into the log: what the two sides of the staging area share, the
 * program's (runtime/stage.c, in libmemflow; runtime/stage.h tells the
 * why) and memflow run's (cli/stage_drain.c, in the memflow program).  Stateless: every function works
 * on the header it is given.  Private to those files and their tests.
 *
 * The file: a header (identity, the log its slots belong to, per-slot
 * state, sequence and length), then MF_STAGE_SLOTS slots of one chunk
 * each.  States move FREE -> FILLING (a thread takes the slot for a chunk
 * it claimed) -> FULL (the chunk is done) -> WRITING (someone copies it into
 * the log with pwrite) -> FREE, every move a compare-and-swap or a store by
 * the one owner of the state, so memflow run and the program's threads
 * never write the same slot into the log at once except as the same bytes.
 * A slot is reused without being cleared: the recorder stores a zero word
 * after each record before the record's own word (mf_thread_commit), so a
 * chunk's records end at the first zero word and what lies past it is an
 * older chunk's; only what lies before it is ever written into the log.
 * Freeing a slot moves its sequence on; a writer of a slot that is still
 * being filled (a snapshot: memflow_dump, exit) copies the recorded prefix
 * aside and writes it only if the sequence did not move meanwhile, so a
 * slot reused for another chunk is never written where the old one goes.
 */
#ifndef MEMFLOW_STAGE_SLOTS_H
#define MEMFLOW_STAGE_SLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "log_format.h"
#include "run_id.h"

#define MF_STAGE_SLOTS 32u              /* 32 MiB of address space; pages on use */
#define MF_STAGE_SUFFIX ".stage"        /* memflow-RUNID.stage in the output folder */
#define STAGE_MAGIC "MFSTAGE"           /* 8 bytes with the NUL */
#define STAGE_VERSION 2u
#define STAGE_HEADER_BYTES 16384u
#define STAGE_WAKE_AT_FULL 2u           /* full slots waiting that wake memflow run */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_FULL = 2, SLOT_WRITING = 3 };

typedef struct stage_header {
    char magic[8];
    uint32_t version;
    uint32_t slots;
    uint32_t slot_size;
    uint32_t header_bytes;
    int32_t owner;                   /* the pid that may adopt it */
    int32_t consumer;                /* memflow run's pid */
    uint32_t adopted;                /* an image of owner adopted it */
    uint32_t log_set;                /* log_* below are valid */
    uint32_t consumer_gone;          /* memflow run cannot write: the program does */
    uint32_t wake;                   /* futex word memflow run's drain sleeps on */
    uint32_t waiting;                /* it sleeps there now */
    uint64_t reserved_chunks;        /* chunks [0, n) of the log have their disk space */
    uint64_t log_dev, log_ino;
    uint8_t log_run_id[MF_RUN_ID_BYTES]; /* the run id in the log's header */
    uint32_t recovered;              /* a reader wrote the slots back (after a kill) */
    uint32_t state[MF_STAGE_SLOTS];
    uint32_t seq[MF_STAGE_SLOTS];    /* moves on each time the slot is freed */
    uint64_t used[MF_STAGE_SLOTS];   /* bytes of a FULL slot */
    char log_path[4096 + 64];
} stage_header;

_Static_assert(sizeof(stage_header) <= STAGE_HEADER_BYTES, "stage header");
_Static_assert(MF_STAGE_SLOTS <= 32, "one bit a slot in populated");

/* Bytes of the whole file: the header and every slot. */
static inline size_t mf_stage_area_bytes(void)
{
    return STAGE_HEADER_BYTES + (size_t)MF_STAGE_SLOTS * MF_CHUNK_SIZE;
}

/* Slot i's first byte. */
static inline char *mf_stage_slot_base(stage_header *h, uint32_t i)
{
    return (char *)h + STAGE_HEADER_BYTES + (size_t)i * MF_CHUNK_SIZE;
}

/* Whether h is a stage of this layout (this memflow's). */
int mf_stage_layout_ok(const stage_header *h);

/* How many slots are in state. */
uint32_t mf_stage_count_state(stage_header *h, uint32_t state);

/* The futex system call on word (FUTEX_WAIT, FUTEX_WAKE). */
long mf_stage_futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout);

/*
 * Write FULL slot i into the log.  Returns 1 when written (the slot is then
 * WRITING, its sequence moved on, for the caller to free or reuse), 0 when
 * it was not FULL, -1 when the write failed (it is FULL again).
 */
int mf_stage_write_full_slot(stage_header *h, uint32_t i, int fd);

/* Every FULL slot into the log, each then FREE.  The count, or -1. */
int mf_stage_write_full_slots(stage_header *h, int fd);

/*
 * Write the recorded prefix of slot i while others may fill, copy and
 * clear it: copied aside into scratch (MF_CHUNK_SIZE bytes), written only
 * if the slot was not cleared meanwhile.  Returns 1 (written), 0 (nothing
 * to write), -1.
 */
int mf_stage_write_snapshot(stage_header *h, uint32_t i, int fd, char *scratch);

/* Where slot i's recorded records end now (walking from `from`, a record
 * boundary); it only grows while the slot is filled. */
size_t mf_stage_recorded(stage_header *h, uint32_t i, size_t from);

/*
 * The same as mf_stage_write_snapshot for what slot i recorded past byte
 * `from` (a record boundary up to which the log already holds it; 0 for
 * the whole image), where seq is the slot's sequence when the caller
 * learned `from`: written where it goes in its chunk only if the sequence
 * is still seq after the copy (the slot still holds the chunk `from` was
 * learned of), *end set to where the recorded prefix ends (from when
 * nothing was written).  Returns 1 (written), 0 (nothing new, or the slot
 * was cleared or moved on), -1.  memflow run writes what idle threads
 * recorded, so that its analysis during the run sees it.
 */
int mf_stage_write_snapshot_from(stage_header *h, uint32_t i, int fd, char *scratch, size_t from,
                                 uint32_t seq, size_t *end);

/*
 * Once no process can touch the slots any more (the program is gone):
 * every slot that is not FREE into the log - a FULL one (or one whose copy
 * was cut short) whole, one still being filled up to its recorded prefix.
 * Writing a slot twice writes the same bytes.  The count, or -1 (errno).
 */
int mf_stage_write_every_slot(stage_header *h, int fd);

#endif /* MEMFLOW_STAGE_SLOTS_H */
