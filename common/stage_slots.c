/*
 * stage_slots.c - the staging file's layout checks and the writing of its
 * slots into the log (see stage_slots.h), for both sides of the staging
 * area.  Nothing here calls malloc.
 */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stage_slots.h"

int mf_stage_layout_ok(const stage_header *h)
{
    return memcmp(h->magic, STAGE_MAGIC, 8) == 0 && h->version == STAGE_VERSION &&
           h->slots == MF_STAGE_SLOTS && h->slot_size == MF_CHUNK_SIZE &&
           h->header_bytes == STAGE_HEADER_BYTES;
}

uint32_t mf_stage_count_state(stage_header *h, uint32_t state)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++)
        n += __atomic_load_n(&h->state[i], __ATOMIC_RELAXED) == state;
    return n;
}

long mf_stage_futex(uint32_t *word, int op, uint32_t value, const struct timespec *timeout)
{
    return syscall(SYS_futex, word, op, value, timeout, NULL, 0);
}

/* The chunk index a slot's image belongs to; 0 when it holds no chunk. */
static uint32_t chunk_index(const char *image)
{
    const mf_chunk_header *ch = (const mf_chunk_header *)image;
    return __atomic_load_n(&ch->magic, __ATOMIC_ACQUIRE) == MF_CHUNK_MAGIC ? ch->index : 0;
}

/* Bytes of a chunk image up to its first zero (unwritten) record word,
 * walking from `from` (a record boundary: what is before is known). */
static size_t recorded_from(const char *image, size_t from)
{
    size_t at = from > sizeof(mf_chunk_header) ? from : sizeof(mf_chunk_header);
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

static size_t recorded_prefix(const char *image)
{
    return recorded_from(image, 0);
}

/* pwrite len bytes that stand at offset from in chunk index.  0 or -1 (errno). */
static int write_part(int fd, uint32_t index, size_t from, const char *image, size_t len)
{
    if (index == 0) {
        errno = EINVAL; /* never the file header's place */
        return -1;
    }
    off_t at = (off_t)index * MF_CHUNK_SIZE + (off_t)from;
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

/* The seal of chunk index in the file: its records reach len. */
static int write_seal(int fd, uint32_t index, size_t len)
{
    mf_chunk_header h = { 0 };
    mf_chunk_seal(&h, len);
    return write_part(fd, index, offsetof(mf_chunk_header, sealed), (const char *)&h.sealed,
                      sizeof h.sealed);
}

/*
 * Write the bytes [from, len) of a chunk image (bytes: the image's byte
 * from on) where chunk index goes, the seal last: from 0, the records and
 * then the header (whose seal says len), else the records and then a seal
 * of len.  A pwrite copies its bytes in the order they stand, so a reader
 * of the log meanwhile may see a record's word without the rest of it (the
 * word comes first in the file, unlike in a slot, where it is stored
 * last); it reads a staged chunk only up to its seal while the program
 * runs, and the seal never says more than what was written before it.
 * 0 or -1 (errno).
 */
static int write_sealed(int fd, uint32_t index, size_t from, const char *bytes, size_t len)
{
    size_t head = sizeof(mf_chunk_header);
    if (from == 0 && len < head)
        return write_part(fd, index, 0, bytes, len);
    if (from == 0)
        return write_part(fd, index, head, bytes + head, len - head) < 0
                   ? -1
                   : write_part(fd, index, 0, bytes, head);
    return write_part(fd, index, from, bytes, len - from) < 0 ? -1 : write_seal(fd, index, len);
}

/* Write a chunk image's first len bytes where its chunk goes, its header
 * (which holds its seal: len) last.  0 or -1 (errno). */
static int write_image(int fd, const char *image, size_t len)
{
    return write_sealed(fd, chunk_index(image), 0, image, len);
}

int mf_stage_write_full_slot(stage_header *h, uint32_t i, int fd)
{
    uint32_t expected = SLOT_FULL;
    if (!__atomic_compare_exchange_n(&h->state[i], &expected, SLOT_WRITING, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    size_t used = (size_t)__atomic_load_n(&h->used[i], __ATOMIC_RELAXED);
    if (used > MF_CHUNK_SIZE || write_image(fd, mf_stage_slot_base(h, i), used) < 0) {
        __atomic_store_n(&h->state[i], SLOT_FULL, __ATOMIC_RELEASE);
        return -1;
    }
    __atomic_add_fetch(&h->seq[i], 1, __ATOMIC_SEQ_CST);
    return 1;
}

int mf_stage_write_full_slots(stage_header *h, int fd)
{
    int n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        int rc = mf_stage_write_full_slot(h, i, fd);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
            n++;
        }
    }
    return n;
}

size_t mf_stage_recorded(stage_header *h, uint32_t i, size_t from)
{
    return recorded_from(mf_stage_slot_base(h, i), from);
}

int mf_stage_write_snapshot(stage_header *h, uint32_t i, int fd, char *scratch)
{
    size_t end;
    return mf_stage_write_snapshot_from(h, i, fd, scratch, 0,
                                        __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE), &end);
}

int mf_stage_write_snapshot_from(stage_header *h, uint32_t i, int fd, char *scratch, size_t from,
                                 uint32_t before, size_t *end)
{
    *end = from;
    if (__atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE) == SLOT_FREE ||
        __atomic_load_n(&h->seq[i], __ATOMIC_ACQUIRE) != before)
        return 0;
    const char *image = mf_stage_slot_base(h, i);
    uint32_t index = chunk_index(image);
    size_t len = recorded_from(image, from);
    if (len <= from)
        return 0;
    memcpy(scratch, image + from, len - from);
    /* A read-modify-write that adds nothing: its release half keeps the
     * copy's loads before it (a plain load could be done first). */
    if (__atomic_fetch_add(&h->seq[i], 0, __ATOMIC_ACQ_REL) != before || index == 0 ||
        chunk_index(image) != index)
        return 0;
    if (from == 0)
        mf_chunk_seal(scratch, len); /* the copy's records reach len (more may follow) */
    if (write_sealed(fd, index, from, scratch, len) < 0)
        return -1;
    *end = len;
    return 1;
}

int mf_stage_write_every_slot(stage_header *h, int fd)
{
    int n = 0;
    for (uint32_t i = 0; i < MF_STAGE_SLOTS; i++) {
        uint32_t state = __atomic_load_n(&h->state[i], __ATOMIC_ACQUIRE);
        char *image = mf_stage_slot_base(h, i);
        if (state == SLOT_FREE || chunk_index(image) == 0)
            continue;
        size_t len = state == SLOT_FILLING ? recorded_prefix(image)
                                           : (size_t)__atomic_load_n(&h->used[i], __ATOMIC_RELAXED);
        if (state == SLOT_FILLING) /* nobody writes it any more: what it holds is all */
            mf_chunk_seal(image, len);
        if (len > MF_CHUNK_SIZE || write_image(fd, image, len) < 0)
            return -1;
        __atomic_store_n(&h->state[i], SLOT_FREE, __ATOMIC_RELEASE);
        n++;
    }
    return n;
}
