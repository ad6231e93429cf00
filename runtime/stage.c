/*
 * stage.c - the staging area between the program's threads and the log
 * file under `memflow run` (see stage.h for the why and the contract).
 *
 * The area, one file: a header (identity, the log its slots belong to,
 * per-slot state, sequence and length), then MF_STAGE_SLOTS slots of one
 * chunk each.  States move FREE -> FILLING (a thread takes the slot for a
 * chunk it claimed) -> FULL (the chunk is done) -> WRITING (someone copies
 * it into the log with pwrite) -> FREE, every move a compare-and-swap or a
 * store by the one owner of the state, so memflow run and the program's
 * threads never write the same slot into the log at once except as the
 * same bytes.  A slot is reused without being cleared: the recorder stores
 * a zero word after each record before the record's own word
 * (mf_thread_commit), so a chunk's records end at the first zero word and
 * what lies past it is an older chunk's; only what lies before it is ever
 * written into the log.  Freeing a slot moves its sequence on; a writer of
 * a slot that is still being filled (a snapshot: memflow_dump, exit)
 * copies the recorded prefix aside and writes it only if the sequence did
 * not move meanwhile, so a slot reused for another chunk is never written
 * where the old one goes.
 *
 * The program seldom makes a system call for memflow run: memflow run
 * looks for full slots every millisecond or so while the program records
 * (waking a process costs an inter-processor interrupt, dear under a
 * hypervisor), less often when it does not; the program wakes it only when
 * full slots pile up while it sleeps.  A process maps few slots (each is a
 * MiB of its resident memory): when those are all in use it writes a full
 * one itself rather than map another.  It also does the program's slower kernel work ahead of it:
 * it reserves the log file's disk space (fallocate) a few chunks beyond the
 * program's last claim, so that a claim finds its chunk reserved and takes
 * no lock on the file that memflow run's copies hold, and it maps the pages
 * of the next slots into the page cache, so that the program's first use of a
 * slot only maps them.  Nothing here calls malloc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log_format.h"
#include "log_writer.h"
#include "run_id.h"
#include "stage.h"

#define STAGE_MAGIC "MFSTAGE"           /* 8 bytes with the NUL */
#define STAGE_VERSION 2u
#define HEADER_BYTES 16384u
#define RESERVE_AHEAD 8u                /* chunks memflow run reserves beyond the claims */
#define RESERVE_RETRY_NS 100000000ull   /* after the disk refused, try again this much later */
#define POPULATE_AHEAD 4u               /* slots beyond the highest in use it maps */
#define MAPPED_BUDGET 3u                /* slots a process maps beyond one a filling slot */
#define WAKE_AT_FULL 2u                 /* full slots waiting that wake memflow run */

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

_Static_assert(sizeof(stage_header) <= HEADER_BYTES, "stage header");
_Static_assert(MF_STAGE_SLOTS <= 32, "one bit a slot in populated");

struct mf_stage {                    /* memflow run's handle */
    stage_header *h;
    size_t bytes;
    int fd;                          /* the stage file, locked */
    int complete;                    /* the final drain wrote every slot */
    char path[4096 + 64];
    int log_fd;                      /* the log, opened once the program names it */
    uint32_t populated;              /* slots [0, n) have their pages in the page cache */
    uint64_t reserved_by_us;         /* the log's length as reserved ahead here */
    uint64_t claimed_seen;           /* the program's claims at the last look */
    int busy;                        /* they moved since the look before */
    uint64_t reserve_retry_ns;       /* the disk said no: the program reserves itself
                                        until then (CLOCK_MONOTONIC) */
};

static stage_header *stage;          /* this process's adopted stage, or NULL */
static size_t stage_bytes;
static uint32_t populated;           /* bit i: slot i's pages are mapped here (atomic) */
static int adopt_tried;              /* adopt at most once per process image */

static size_t area_bytes(void)
{
    return HEADER_BYTES + (size_t)MF_STAGE_SLOTS * MF_CHUNK_SIZE;
}

static char *slot_base(stage_header *h, uint32_t i)
{
    return (char *)h + HEADER_BYTES + (size_t)i * MF_CHUNK_SIZE;
}

static long futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

/* ---- writing slots into the log -------------------------------------- */

/* The chunk index a slot's image belongs to; 0 when it holds no chunk. */
static uint32_t chunk_index(const char *image)
{
    const mf_chunk_header *ch = (const mf_chunk_header *)image;
    return __atomic_load_n(&ch->magic, __ATOMIC_ACQUIRE) == MF_CHUNK_MAGIC ? ch->index : 0;
}

/* Bytes of a chunk image up to its first zero (unwritten) record word. */
static size_t recorded_prefix(const char *image)
{
    size_t at = sizeof(mf_chunk_header);
    while (at + sizeof(uint64_t) <= MF_CHUNK_SIZE) {
        uint64_t word = __atomic_load_n((const uint64_t *)(const void *)(image + at),
                                        __ATOMIC_ACQUIRE);
        uint32_t size = (uint32_t)(word >> 16) & 0xffffu;
        if (!word || size < 16 || size % 8 || at + size > MF_CHUNK_SIZE)
            break;
        at += size;
    }
    return at;
}

/* pwrite len bytes of a chunk image where its chunk goes.  0 or -1 (errno). */
static int write_image(int fd, const char *image, size_t len)
{
    uint32_t index = chunk_index(image);
    if (index == 0) {
        errno = EINVAL; /* never the file header's place */
        return -1;
    }
    off_t at = (off_t)index * MF_CHUNK_SIZE;
    while (len) {
        ssize_t n = pwrite(fd, image, len, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        image += n;
        at += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * Write FULL slot i into the log.  Returns 1 when written (the slot is then
 * WRITING, its sequence moved on, for the caller to free or reuse), 0 when
 * it was not FULL, -1 when the write failed (it is FULL again).
 */
static int write_full_slot(stage_header *h, uint32_t i, int fd)
{
    uint32_t expected = SLOT_FULL;
    if (!__atomic_compare_exchange_n(&h->state[i], &expected, SLOT_WRITING, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    size_t used = (size_t)__atomic_load_n(&h->used[i], __ATOMIC_RELAXED);
    if (used > MF_CHUNK_SIZE || write_image(fd, slot_base(h, i), used) < 0) {
        __atomic_store_n(&h->state[i], SLOT_FULL, __ATOMIC_RELEASE);
        return -1;
    }
    __atomic_add_fetch(&h->seq[i], 1, __ATOMIC_SEQ_CST);
    return 1;
}

/* Every FULL slot into the log, each then FREE.  The count, or -1. */
static int write_full_slots(stage_header *h, int fd)
{
    int n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        int rc = write_full_slot(h, i, fd);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
            n++;
        }
    }
    return n;
}

/*
 * Write the recorded prefix of slot i while others may fill, copy and
 * clear it: copied aside into scratch, written only if the slot was not
 * cleared meanwhile.  Returns 1 (written), 0 (nothing to write), -1.
 */
static int write_snapshot(stage_header *h, uint32_t i, int fd, char *scratch)
{
    uint32_t before = __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE) == SLOT_FREE)
        return 0;
    const char *image = slot_base(h, i);
    size_t len = recorded_prefix(image);
    memcpy(scratch, image, len);
    /* A read-modify-write that adds nothing: its release half keeps the
     * copy's loads before it (a plain load could be done first). */
    if (__atomic_fetch_add(&h->seq[i], 0, __ATOMIC_ACQ_REL) != before || chunk_index(scratch) == 0)
        return 0;
    return write_image(fd, scratch, len) < 0 ? -1 : 1;
}

/*
 * Once no process can touch the slots any more (the program is gone):
 * every slot that is not FREE into the log - a FULL one (or one whose copy
 * was cut short) whole, one still being filled up to its recorded prefix.
 * Writing a slot twice writes the same bytes.  The count, or -1 (errno).
 */
static int write_every_slot(stage_header *h, int fd)
{
    int n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        uint32_t state = __atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE);
        const char *image = slot_base(h, i);
        if (state == SLOT_FREE || chunk_index(image) == 0)
            continue;
        size_t len = state == SLOT_FILLING ? recorded_prefix(image)
                                           : (size_t)__atomic_load_n(&h->used[i], __ATOMIC_RELAXED);
        if (len > MF_CHUNK_SIZE || write_image(fd, image, len) < 0)
            return -1;
        __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
        n++;
    }
    return n;
}

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
        (size_t)st->st_size != area_bytes())
        return -1;
    return fd;
}

/* Whether h is a stage of this layout (this memflow's). */
static int layout_is_ours(const stage_header *h)
{
    return memcmp(h->magic, STAGE_MAGIC, 8) == 0 && h->version == STAGE_VERSION &&
           h->slots == MF_STAGE_SLOTS && h->slot_size == MF_CHUNK_SIZE &&
           h->header_bytes == HEADER_BYTES;
}

/* Whether h is a stage memflow run handed to this very process. */
static int header_is_ours(const stage_header *h)
{
    return layout_is_ours(h) && h->owner == (int32_t)getpid();
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
    stage_header *h = mmap(NULL, area_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (h == MAP_FAILED)
        return 0;
    uint32_t no = 0;
    /* The kernel must be able to populate slots (5.14): a slot whose page
     * cannot be had is then refused instead of a SIGBUS on a store. */
    if (!header_is_ours(h) || madvise(slot_base(h, 0), 4096, MADV_POPULATE_WRITE) != 0 ||
        !__atomic_compare_exchange_n(&h->adopted, &no, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED)) {
        munmap(h, area_bytes());
        return 0;
    }
    close(fd); /* memflow run's gift to this process; the mapping is enough */
    snprintf(h->log_path, sizeof h->log_path, "%s", log_path);
    h->log_dev = (uint64_t)log_dev;
    h->log_ino = (uint64_t)log_ino;
    memcpy(h->log_run_id, run_id, MF_RUN_ID_BYTES);
    __atomic_store_n(&h->log_set, 1, __ATOMIC_RELEASE);
    stage_bytes = area_bytes();
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
    return h && chunk >= slot_base(h, 0) && chunk < slot_base(h, MF_STAGE_SLOTS);
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

/* How many slots are in state. */
static uint32_t count_state(stage_header *h, uint32_t state)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        n += __atomic_load_n(&h->state[i], __ATOMIC_RELAXED) == state;
    return n;
}

/* Every slot taken: write a FULL one here and make it ours, or -1. */
static int take_full(stage_header *h, int fd)
{
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        if (write_full_slot(h, i, fd) > 0) {
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
    if (i < 0 && (uint32_t)__builtin_popcount(mapped) >= MAPPED_BUDGET + count_state(h, SLOT_FILLING))
        i = take_full(h, log_fd);
    if (i < 0)
        i = take_free(h, ~mapped);
    if (i < 0)
        i = take_full(h, log_fd);
    if (i < 0)
        return NULL;
    char *base = slot_base(h, (uint32_t)i);
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
    ch->reserved = 0;
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
    uint32_t i = (uint32_t)((size_t)(chunk - slot_base(h, 0)) / MF_CHUNK_SIZE);
    __atomic_store_n(&h->used[i], (uint64_t)used, __ATOMIC_RELAXED);
    __atomic_store_n(&h->state[i], SLOT_FULL, __ATOMIC_SEQ_CST);
    if (!consumer_alive(h)) {
        write_full_slots(h, log_fd);
        return;
    }
    /* memflow run is behind and asleep: wake it (an interrupt on its core,
     * so only then). */
    if (__atomic_load_n(&h->waiting, __ATOMIC_SEQ_CST) && count_state(h, SLOT_FULL) >= WAKE_AT_FULL) {
        __atomic_add_fetch(&h->wake, 1, __ATOMIC_SEQ_CST);
        futex(&h->wake, FUTEX_WAKE, 1, NULL);
    }
}

void mf_stage_flush(int log_fd)
{
    stage_header *h = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    if (!h)
        return;
    write_full_slots(h, log_fd);
    char *scratch = mmap(NULL, MF_CHUNK_SIZE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED)
        return;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        write_snapshot(h, i, log_fd, scratch);
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

/* ---- memflow run's side ------------------------------------------------ */

/*
 * The stage file: created new (never through a symlink, never another
 * run's), 0600, its whole size reserved on disk so that no store into the
 * mapping can meet a full disk (SIGBUS), and locked.  The lock is on the
 * open file: memflow run's descriptor, the program's inherited one and its
 * mapping all hold it, so it is free exactly when every process that could
 * still write a slot is gone (mf_stage_recover).  -1 with a message.
 */
static int create_file(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "no staging area: cannot create '%s': %s", path, strerror(errno));
        return -1;
    }
    const char *failed = NULL;
    if (fallocate(fd, 0, 0, (off_t)area_bytes()) != 0)
        failed = "reserve its disk space";
    else if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        failed = "lock it";
    if (failed) {
        snprintf(err, errlen, "no staging area: cannot %s ('%s'): %s", failed, path,
                 strerror(errno));
        unlink(path);
        close(fd);
        return -1;
    }
    return mf_log_writer_move_high(fd); /* the program's low numbers stay free */
}

mf_stage *mf_stage_create(const char *dir, const uint8_t run_id[MF_RUN_ID_BYTES], char *env,
                          size_t envlen, char *err, size_t errlen)
{
    static mf_stage handle;
    char hex[MF_RUN_ID_HEX];
    mf_run_id_format(run_id, hex);
    handle = (mf_stage){ .fd = -1, .log_fd = -1 };
    if ((size_t)snprintf(handle.path, sizeof handle.path, "%s/memflow-%s%s", dir, hex,
                         MF_STAGE_SUFFIX) >= sizeof handle.path) {
        snprintf(err, errlen, "no staging area: the folder name is too long");
        return NULL;
    }
    int fd = create_file(handle.path, err, errlen);
    struct stat st;
    if (fd < 0)
        return NULL;
    stage_header *h = fstat(fd, &st) == 0 ? mmap(NULL, area_bytes(), PROT_READ | PROT_WRITE,
                                                 MAP_SHARED, fd, 0)
                                          : MAP_FAILED;
    if (h == MAP_FAILED) {
        snprintf(err, errlen, "no staging area (mmap '%s'): %s", handle.path, strerror(errno));
        unlink(handle.path);
        close(fd);
        return NULL;
    }
    memcpy(h->magic, STAGE_MAGIC, 8);
    h->version = STAGE_VERSION;
    h->slots = MF_STAGE_SLOTS;
    h->slot_size = MF_CHUNK_SIZE;
    h->header_bytes = HEADER_BYTES;
    h->consumer = (int32_t)getpid();
    snprintf(env, envlen, "%d:%llu:%llu", fd, (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    handle.h = h;
    handle.bytes = area_bytes();
    handle.fd = fd;
    return &handle;
}

void mf_stage_child_owns(mf_stage *s)
{
    __atomic_store_n(&s->h->owner, (int32_t)getpid(), __ATOMIC_RELEASE);
    fcntl(s->fd, F_SETFD, 0);
}

/*
 * The log the program named in h (its path copied into path, which holds
 * sizeof h->log_path bytes), open for
 * writing, if that name is still the file the program opened (device,
 * inode) and that file still the log of its run (the run id in its
 * header); else -1 with *why saying what is wrong.
 */
static int open_named_log(const stage_header *h, char *path, const char **why)
{
    snprintf(path, sizeof h->log_path, "%.*s", (int)sizeof h->log_path - 1, h->log_path);
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    mf_file_header lh;
    *why = NULL;
    if (fd < 0)
        *why = strerror(errno);
    else if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != h->log_dev ||
             (uint64_t)st.st_ino != h->log_ino)
        *why = "another file has its name now";
    else if (pread(fd, &lh, sizeof lh, 0) != (ssize_t)sizeof lh ||
             memcmp(lh.run_id, h->log_run_id, MF_RUN_ID_BYTES) != 0)
        *why = "it is the log of another run now";
    if (!*why)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The log the program named, opened for writing; -1 if it has named none
 * yet, -2 (a message in err) if it cannot be opened. */
static int open_log(mf_stage *s, char *err, size_t errlen)
{
    if (s->log_fd >= 0)
        return s->log_fd;
    stage_header *h = s->h;
    if (!__atomic_load_n(&h->log_set, __ATOMIC_ACQUIRE))
        return -1;
    char path[sizeof h->log_path];
    const char *why;
    int fd = open_named_log(h, path, &why);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open the log '%s' to copy staged chunks into: %s", path,
                 why);
        return -2;
    }
    return s->log_fd = fd;
}

/* The log's chunks_claimed, as the program's header says now. */
static uint64_t chunks_claimed(int fd)
{
    uint64_t n = 0;
    if (pread(fd, &n, sizeof n, (off_t)offsetof(mf_file_header, chunks_claimed)) != sizeof n)
        return 0;
    return n;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Keep the log's disk space reserved RESERVE_AHEAD chunks beyond the
 * program's claims; when the disk or a file size limit says no, leave it to
 * the program for RESERVE_RETRY_NS. */
static void reserve_ahead(mf_stage *s, int fd)
{
    stage_header *h = s->h;
    uint64_t claimed = chunks_claimed(fd);
    s->busy = claimed != s->claimed_seen;
    s->claimed_seen = claimed;
    uint64_t want = claimed + RESERVE_AHEAD;
    if (want <= s->reserved_by_us + RESERVE_AHEAD / 2)
        return;
    if (s->reserve_retry_ns && monotonic_ns() < s->reserve_retry_ns)
        return;
    uint64_t from = s->reserved_by_us > claimed ? s->reserved_by_us : claimed ? claimed : 1;
    if (fallocate(fd, 0, (off_t)(from * MF_CHUNK_SIZE),
                  (off_t)((want - from) * MF_CHUNK_SIZE)) != 0) {
        s->reserve_retry_ns = monotonic_ns() + RESERVE_RETRY_NS;
        return;
    }
    s->reserve_retry_ns = 0;
    s->reserved_by_us = want;
    __atomic_store_n(&h->reserved_chunks, want, __ATOMIC_RELEASE);
}

/* Bring the pages of the slots the program will take next into the page
 * cache. */
static void populate_ahead(mf_stage *s)
{
    uint32_t highest = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        if (__atomic_load_n(&s->h->state[i], __ATOMIC_RELAXED) != SLOT_FREE)
            highest = i + 1;
    uint32_t want = highest + POPULATE_AHEAD < MF_STAGE_SLOTS ? highest + POPULATE_AHEAD
                                                              : MF_STAGE_SLOTS;
    if (want > s->populated &&
        madvise(slot_base(s->h, s->populated), (size_t)(want - s->populated) * MF_CHUNK_SIZE,
                MADV_POPULATE_WRITE) == 0)
        s->populated = want;
}

/* After the program: the log no longer than its claimed chunks (what was
 * reserved ahead and never claimed is given back). */
static void trim(mf_stage *s, int fd)
{
    uint64_t claimed = chunks_claimed(fd);
    if (s->reserved_by_us > claimed && claimed > 0)
        if (ftruncate(fd, (off_t)(claimed * MF_CHUNK_SIZE)) != 0)
            return; /* the longer file reads the same: unclaimed chunks are zeros */
}

int mf_stage_drain(mf_stage *s, int final, char *err, size_t errlen)
{
    stage_header *h = s->h;
    if (!final)
        populate_ahead(s);
    int fd = open_log(s, err, errlen);
    if (fd == -1)
        return 0;
    if (fd < 0 || (!final && __atomic_load_n(&h->consumer_gone, __ATOMIC_RELAXED)))
        return fd < 0 ? -1 : 0;
    if (!final)
        reserve_ahead(s, fd);
    int n = write_full_slots(h, fd);
    if (n < 0) {
        snprintf(err, errlen, "cannot copy staged chunks into the log '%s': %s", h->log_path,
                 strerror(errno));
        __atomic_store_n(&h->consumer_gone, 1, __ATOMIC_RELAXED);
        return -1;
    }
    if (!final)
        return n;
    /* The process is gone: what its slots hold no longer changes. */
    int rest = write_every_slot(h, fd);
    if (rest < 0) {
        snprintf(err, errlen, "cannot copy staged chunks into the log '%s': %s", h->log_path,
                 strerror(errno));
        return -1;
    }
    s->complete = 1;
    trim(s, fd);
    return n + rest;
}

int mf_stage_busy(mf_stage *s)
{
    return s->busy || !__atomic_load_n(&s->h->log_set, __ATOMIC_ACQUIRE);
}

void mf_stage_wait(mf_stage *s, int timeout_us)
{
    stage_header *h = s->h;
    uint32_t seen = __atomic_load_n(&h->wake, __ATOMIC_SEQ_CST);
    __atomic_store_n(&h->waiting, 1, __ATOMIC_SEQ_CST);
    if (count_state(h, SLOT_FULL) < WAKE_AT_FULL) {
        struct timespec ts = { timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000 };
        futex(&h->wake, FUTEX_WAIT, seen, &ts);
    }
    __atomic_store_n(&h->waiting, 0, __ATOMIC_SEQ_CST);
}

void mf_stage_wake(mf_stage *s)
{
    __atomic_add_fetch(&s->h->wake, 1, __ATOMIC_SEQ_CST);
    futex(&s->h->wake, FUTEX_WAKE, 1, NULL);
}

/* Remove path if it still names the file fd has open (and nothing
 * planted in its place since). */
static void remove_if_same(const char *path, int fd)
{
    struct stat mine, named;
    if (fstat(fd, &mine) == 0 && lstat(path, &named) == 0 && mine.st_dev == named.st_dev &&
        mine.st_ino == named.st_ino)
        unlink(path);
}

void mf_stage_destroy(mf_stage *s)
{
    if (s->log_fd >= 0)
        close(s->log_fd);
    if (s->complete || !__atomic_load_n(&s->h->log_set, __ATOMIC_ACQUIRE))
        remove_if_same(s->path, s->fd); /* written back, or never used */
    munmap(s->h, s->bytes);
    close(s->fd);
    s->h = NULL;
}

/* ---- a reader's side: what a killed run left staged --------------------- */

/* The stage file at path, open, if it is a regular file of this user that
 * only this user may write; else -1 (errno). */
static int open_own_file(const char *path, struct stat *st)
{
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
        (st->st_mode & 022)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

int mf_stage_recover(const char *path, char *msg, size_t msglen)
{
    struct stat st;
    msg[0] = 0;
    int fd = open_own_file(path, &st);
    if (fd < 0) {
        snprintf(msg, msglen, "'%s': not a staging file of this user (%s); left as it is", path,
                 strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd); /* a run still holds it: memflow run or the program writes it back */
        return 0;
    }
    stage_header *h = (size_t)st.st_size == area_bytes()
                          ? mmap(NULL, area_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                          : MAP_FAILED;
    if (h == MAP_FAILED || !layout_is_ours(h)) {
        snprintf(msg, msglen, "'%s': not a staging file of this memflow (size %lld, or its "
                 "header); left as it is", path, (long long)st.st_size);
        if (h != MAP_FAILED)
            munmap(h, area_bytes());
        close(fd);
        return -1;
    }
    int n = 0, log_fd = -1;
    if (h->log_set && !h->recovered) {
        char log_path[sizeof h->log_path];
        const char *why;
        log_fd = open_named_log(h, log_path, &why);
        n = log_fd < 0 ? -1 : write_every_slot(h, log_fd);
        if (log_fd < 0)
            snprintf(msg, msglen, "'%s' holds staged records of the log '%s', which cannot take "
                     "them (%s); left as it is", path, log_path, why);
        else if (n < 0)
            snprintf(msg, msglen, "cannot write the records staged in '%s' into the log '%s': "
                     "%s; left as it is", path, log_path, strerror(errno));
        else if (n > 0)
            snprintf(msg, msglen, "wrote %d chunk(s) that a killed run left in '%s' into its "
                     "log '%s'", n, path, log_path);
    }
    if (n >= 0) {
        h->recovered = 1;
        remove_if_same(path, fd);
    }
    if (log_fd >= 0)
        close(log_fd);
    munmap(h, area_bytes());
    close(fd);
    return n;
}
