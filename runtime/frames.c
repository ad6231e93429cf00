/*
 * frames.c - the table of symbolic frames (see frames.h).
 *
 * Entries live in an mmap'd arena and are reached two ways: by content
 * through an open-addressing table of pointers (read without a lock, with
 * acquire loads; replaced by a doubled copy under the lock, old copies stay
 * mapped for readers still walking them), and by id through an mmap'd
 * array (for stacks.c, which writes the frames a stack uses).  An entry
 * remembers the log generation its FRAME record went to, so a forked
 * child's new log gets each frame again on its first use there.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "frames.h"
#include "log_format.h"
#include "recorder.h"
#include "slots.h"
#include "thread_state.h"

#define ARENA_CHUNK ((size_t)1 << 20)

typedef struct frame_entry {
    uint64_t hash;
    uint32_t function, file, line, kind;
    uint32_t id;
    uint32_t written_gen;
} frame_entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mf_slots *table;        /* read with acquire, replaced under lock */
static frame_entry **by_id;      /* MF_FRAMES_MAX + 1 pointers, mmap'd on first use */
static char *arena;
static size_t arena_left;
static uint32_t n_frames;
static uint32_t generation = 1;

static uint64_t hash_frame(uint32_t function, uint32_t file, uint32_t line, unsigned kind)
{
    uint64_t h = ((uint64_t)function << 32 | file) * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)line << 8 | kind) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h ? h : 1;
}

static frame_entry *find(const mf_slots *s, uint64_t hash, uint32_t function, uint32_t file,
                         uint32_t line, unsigned kind)
{
    if (!s)
        return NULL;
    for (uint32_t i = (uint32_t)hash & s->mask;; i = (i + 1) & s->mask) {
        frame_entry *e = __atomic_load_n((frame_entry **)&s->slot[i], __ATOMIC_ACQUIRE);
        if (!e || (e->hash == hash && e->function == function && e->file == file &&
                   e->line == line && e->kind == kind))
            return e;
    }
}

static frame_entry *arena_entry(void)
{
    if (arena_left < sizeof(frame_entry)) {
        char *chunk = mf_map_zeroed(ARENA_CHUNK);
        if (!chunk)
            return NULL;
        arena = chunk;
        arena_left = ARENA_CHUNK;
    }
    frame_entry *e = (frame_entry *)(void *)arena;
    arena += sizeof *e;
    arena_left -= sizeof *e;
    return e;
}

/* Write e's FRAME record into the calling thread's chunk.  Lock held. */
static void write_frame(frame_entry *e)
{
    mf_thread_state *t = mf_thread_state_get();
    mf_rec_frame *r = t ? mf_thread_reserve(t, sizeof *r) : NULL;
    if (!r)
        return; /* no log open: written at its first use in one */
    r->function = e->function;
    r->file = e->file;
    r->line = e->line;
    r->kind = e->kind;
    mf_thread_commit(t, r, MF_RECORD_WORD(MF_REC_FRAME, sizeof *r, e->id));
    e->written_gen = generation;
}

static __attribute__((noinline)) uint32_t add_frame(uint64_t hash, uint32_t function,
                                                    uint32_t file, uint32_t line, unsigned kind)
{
    uint32_t id = 0;
    MF_INTERNAL_BEGIN();
    pthread_mutex_lock(&lock);
    frame_entry *e = find(table, hash, function, file, line, kind);
    if (e) {
        if (e->written_gen != generation)
            write_frame(e);
        id = e->id;
    } else if (n_frames < MF_FRAMES_MAX &&
               (by_id || (by_id = mf_map_zeroed((MF_FRAMES_MAX + 1) * sizeof *by_id))) &&
               mf_slots_reserve(&table) == 0 && (e = arena_entry())) {
        id = n_frames + 1;
        *e = (frame_entry){ hash, function, file, line, kind, id, 0 };
        by_id[id] = e;
        __atomic_store_n(&n_frames, id, __ATOMIC_RELEASE);
        write_frame(e);
        mf_slots_put(table, e);
    }
    pthread_mutex_unlock(&lock);
    MF_INTERNAL_END();
    return id;
}

uint32_t mf_frames_intern(uint32_t function, uint32_t file, uint32_t line, unsigned kind)
{
    uint64_t hash = hash_frame(function, file, line, kind);
    frame_entry *e = find(__atomic_load_n(&table, __ATOMIC_ACQUIRE), hash, function, file, line,
                          kind);
    if (MF_LIKELY(e && e->written_gen == __atomic_load_n(&generation, __ATOMIC_RELAXED)))
        return e->id;
    return add_frame(hash, function, file, line, kind);
}

void mf_frames_ensure_written(uint32_t id)
{
    frame_entry *e = id && id <= __atomic_load_n(&n_frames, __ATOMIC_ACQUIRE) && by_id
                         ? by_id[id] : NULL;
    if (!e || e->written_gen == __atomic_load_n(&generation, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&lock);
    if (e->written_gen != generation)
        write_frame(e);
    pthread_mutex_unlock(&lock);
}

void mf_frames_log_opened(void)
{
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
}

void mf_frames_lock(void)
{
    pthread_mutex_lock(&lock);
}

void mf_frames_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

void mf_frames_after_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    lock = fresh;
}
