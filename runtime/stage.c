/*
 * stage.c - the program's side of the staging area under `memflow run`
 * (see stage.h for the why and the contract, stage_slots.h for the file's
 * layout and how slots reach the log; memflow run's side is
 * cli/stage_drain.c).
 *
 * The program seldom makes a system call for memflow run: memflow run
 * looks for full slots every millisecond or so while the program records
 * (waking a process costs an inter-processor interrupt, dear under a
 * hypervisor), less often when it does not; the program wakes it only when
 * full slots pile up while it sleeps.  A process maps few slots (each is a
 * MiB of its resident memory): when those are all in use it writes a full
 * one itself rather than map another.  Nothing here calls malloc.
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stage.h"
#include "stage_slots.h"

#define MAPPED_BUDGET 3u                /* slots a process maps beyond one a filling slot */

static stage_header *stage;          /* this process's adopted stage, or NULL */
static size_t stage_bytes;
static uint32_t populated;           /* bit i: slot i's pages are mapped here (atomic) */
static int adopt_tried;              /* adopt at most once per process image */

/* ---- the program's side ------------------------------------------------ */

/* MEMFLOW_STAGE = "FD:DEV:INO": the descriptor, if it still names the area. */
static int inherited_descriptor(struct stat *st)
{
    const char *v = getenv("MEMFLOW_STAGE");
    int fd;
    unsigned long long dev, ino;
    if (!v || sscanf(v, "%d:%llu:%llu", &fd, &dev, &ino) != 3 || fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || (unsigned long long)st->st_dev != dev ||
        (unsigned long long)st->st_ino != ino || !S_ISREG(st->st_mode) ||
        (size_t)st->st_size != mf_stage_area_bytes())
        return -1;
    return fd;
}

/* Whether h is a stage memflow run handed to this very process. */
static int header_is_ours(const stage_header *h)
{
    return mf_stage_layout_ok(h) && h->owner == (int32_t)getpid();
}

int mf_stage_adopt(const char *log_path, dev_t log_dev, ino_t log_ino,
                   const uint8_t run_id[MF_RUN_ID_BYTES])
{
    if (stage)
        return 1;
    if (adopt_tried)
        return 0;
    adopt_tried = 1;
    struct stat st;
    int fd = inherited_descriptor(&st);
    if (fd < 0)
        return 0;
    stage_header *h = mmap(NULL, mf_stage_area_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return 0;
    uint32_t no = 0;
    /* The kernel must be able to populate slots (5.14): a slot whose page
     * cannot be had is then refused instead of a SIGBUS on a store. */
    if (!header_is_ours(h) || madvise(mf_stage_slot_base(h, 0), 4096, MADV_POPULATE_WRITE) != 0 ||
        !__atomic_compare_exchange_n(&h->adopted, &no, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED)) {
        munmap(h, mf_stage_area_bytes());
        return 0;
    }
    close(fd); /* memflow run's gift to this process; the mapping is enough */
    snprintf(h->log_path, sizeof h->log_path, "%s", log_path);
    h->log_dev = (uint64_t)log_dev;
    h->log_ino = (uint64_t)log_ino;
    memcpy(h->log_run_id, run_id, MF_RUN_ID_BYTES);
    __atomic_store_n(&h->log_set, 1, __ATOMIC_RELEASE);
    stage_bytes = mf_stage_area_bytes();
    __atomic_store_n(&stage, h, __ATOMIC_RELEASE);
    return 1;
}

int mf_stage_active(void)
{
    return __atomic_load_n(&stage, __ATOMIC_ACQUIRE) != NULL;
}

int mf_stage_reserved(uint64_t index)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    return h && index < __atomic_load_n(&h->reserved_chunks, __ATOMIC_ACQUIRE);
}

int mf_stage_owns(const char *chunk)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    return h && chunk >= mf_stage_slot_base(h, 0) && chunk < mf_stage_slot_base(h, MF_STAGE_SLOTS);
}

/* A FREE slot among those whose bit is in mask, made FILLING; or -1. */
static int take_free(stage_header *h, uint32_t mask)
{
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        uint32_t expected = SLOT_FREE;
        if ((mask >> i & 1) && __atomic_load_n(&h->state[i], __ATOMIC_RELAXED) == SLOT_FREE &&
            __atomic_compare_exchange_n(&h->state[i], &expected, SLOT_FILLING, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

/* Every slot taken: write a FULL one here and make it ours, or -1. */
static int take_full(stage_header *h, int fd)
{
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        if (mf_stage_write_full_slot(h, i, fd) > 0) {
            __atomic_store_n(&h->state[i], SLOT_FILLING, __ATOMIC_RELAXED);
            return (int)i;
        }
    return -1;
}

char *mf_stage_take(uint32_t index, uint32_t tid, int log_fd)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    if (!h)
        return NULL;
    /* Slots this process has mapped first; a new one only while few are
     * (each is a MiB of the program's resident memory) or when memflow
     * run is not behind, else the program writes a full one itself. */
    uint32_t mapped = __atomic_load_n(&populated, __ATOMIC_RELAXED);
    int i = take_free(h, mapped);
    if (i < 0 && (uint32_t)__builtin_popcount(mapped) >= MAPPED_BUDGET + mf_stage_count_state(h, SLOT_FILLING))
        i = take_full(h, log_fd);
    if (i < 0)
        i = take_free(h, ~mapped);
    if (i < 0)
        i = take_full(h, log_fd);
    if (i < 0)
        return NULL;
    char *base = mf_stage_slot_base(h, (uint32_t)i);
    uint32_t bit = 1u << i;
    if (!(__atomic_load_n(&populated, __ATOMIC_RELAXED) & bit)) {
        /* Once per slot: its pages stay mapped, reused chunk after chunk. */
        if (madvise(base, MF_CHUNK_SIZE, MADV_POPULATE_WRITE) != 0) {
            __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
            return NULL; /* no memory for it: the chunk is mapped directly */
        }
        __atomic_or_fetch(&populated, bit, __ATOMIC_RELAXED);
    }
    mf_chunk_header *ch = (mf_chunk_header *)base;
    ch->index = index;
    ch->tid = tid;
    ch->sealed = 0;
    *(uint64_t *)(void *)(base + sizeof *ch) = 0; /* no records yet */
    __atomic_store_n(&ch->magic, MF_CHUNK_MAGIC, __ATOMIC_RELEASE);
    return base;
}

/* Whether memflow run still copies slots: it is the program's parent. */
static int consumer_alive(stage_header *h)
{
    if (__atomic_load_n(&h->consumer_gone, __ATOMIC_RELAXED))
        return 0;
    if (getppid() == (pid_t)h->consumer)
        return 1;
    __atomic_store_n(&h->consumer_gone, 1, __ATOMIC_RELAXED);
    return 0;
}

void mf_stage_full(char *chunk, size_t used, int log_fd)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    uint32_t i = (uint32_t)((size_t)(chunk - mf_stage_slot_base(h, 0)) / MF_CHUNK_SIZE);
    __atomic_store_n(&h->used[i], (uint64_t)used, __ATOMIC_RELAXED);
    __atomic_store_n(&h->state[i], SLOT_FULL, __ATOMIC_SEQ_CST);
    if (!consumer_alive(h)) {
        mf_stage_write_full_slots(h, log_fd);
        return;
    }
    /* memflow run is behind and asleep: wake it (an interrupt on its core,
     * so only then). */
    if (__atomic_load_n(&h->waiting, __ATOMIC_SEQ_CST) && mf_stage_count_state(h, SLOT_FULL) >= STAGE_WAKE_AT_FULL) {
        __atomic_add_fetch(&h->wake, 1, __ATOMIC_SEQ_CST);
        mf_stage_futex(&h->wake, FUTEX_WAKE, 1, NULL);
    }
}

void mf_stage_flush(int log_fd)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    if (!h)
        return;
    mf_stage_write_full_slots(h, log_fd);
    char *scratch = mmap(NULL, MF_CHUNK_SIZE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED)
        return;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        mf_stage_write_snapshot(h, i, log_fd, scratch);
    munmap(scratch, MF_CHUNK_SIZE);
}

void mf_stage_forget(void)
{
    stage_header *h = stage;
    if (!h)
        return;
    stage = NULL;
    populated = 0;
    munmap(h, stage_bytes);
}
