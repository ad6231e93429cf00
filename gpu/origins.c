/*
 * origins.c - who asked for each GPU block, kept until CUPTI's record of
 * the block arrives.
 *
 * The API callback (api.c) learns at the exit of an allocation function, on
 * the calling thread, the address it returned together with that thread's
 * scope, id and call window, and puts it here keyed by the address.  The
 * MEMORY2 record arrives later - when a 4 MiB buffer is full or flushed - on
 * CUPTI's thread, and translate.c takes the origin back by the record's
 * address.  Nothing is ever evicted: the table grows (mmap'd, doubling) as
 * long as records are outstanding, so 100,000 allocations delivered in one
 * buffer all find their scopes.  Entries leave when their record is
 * translated.
 *
 * The same address may be outstanding twice (allocated, freed and allocated
 * again before the buffer came back); take() then picks the entry whose call
 * window holds the record's timestamp, else the oldest.  Keys are
 * (kind, value): an allocation's address, a free's address (only when the
 * free carries a snapshot for sample_rate), or the correlation id of an
 * array allocation (whose handle is not an address).
 *
 * Open addressing with linear probing and backward-shift deletion under one
 * mutex: the callers are CUDA API calls (microseconds) and the buffer walk.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "gpu.h"

typedef struct origin_slot {
    uint64_t key;
    uint32_t kind;   /* enum mf_gpu_key_kind; 0 = empty */
    uint32_t pad;
    mf_gpu_origin origin;
} origin_slot;

#define INITIAL_SLOTS 4096u

static origin_slot *slots;
static size_t capacity; /* a power of two, or 0 before the first put */
static size_t count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(uint64_t key, unsigned kind, size_t cap)
{
    uint64_t h = (key ^ ((uint64_t)kind << 61)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (cap - 1);
}

static origin_slot *map_slots(size_t n)
{
    void *p = mmap(NULL, n * sizeof(origin_slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void insert(origin_slot *table, size_t cap, const origin_slot *entry)
{
    size_t i = slot_of(entry->key, entry->kind, cap);
    while (table[i].kind)
        i = (i + 1) & (cap - 1);
    table[i] = *entry;
}

/* Double the table (or create it); -1 when memory is out. */
static int grow(void)
{
    size_t cap = capacity ? capacity * 2 : INITIAL_SLOTS;
    origin_slot *table = map_slots(cap);
    if (!table)
        return -1;
    for (size_t i = 0; i < capacity; i++)
        if (slots[i].kind)
            insert(table, cap, &slots[i]);
    if (slots)
        munmap(slots, capacity * sizeof(origin_slot));
    slots = table;
    capacity = cap;
    return 0;
}

int mf_gpu_origin_put(unsigned kind, uint64_t key, const mf_gpu_origin *origin)
{
    origin_slot entry = { key, kind, 0, *origin };
    pthread_mutex_lock(&lock);
    int rc = 0;
    if ((count + 1) * 2 > capacity)
        rc = grow();
    if (rc == 0) {
        insert(slots, capacity, &entry);
        count++;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Remove slot i, shifting later members of its probe run back. */
static void remove_at(size_t i)
{
    size_t mask = capacity - 1;
    size_t hole = i;
    for (size_t j = (i + 1) & mask; slots[j].kind; j = (j + 1) & mask) {
        size_t home = slot_of(slots[j].key, slots[j].kind, capacity);
        /* j may move into the hole unless its home lies after the hole */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            slots[hole] = slots[j];
            hole = j;
        }
    }
    memset(&slots[hole], 0, sizeof slots[hole]);
    count--;
}

static int window_holds(const mf_gpu_origin *o, uint64_t time_ns)
{
    return time_ns && o->enter_ns <= time_ns && time_ns <= o->exit_ns;
}

int mf_gpu_origin_take(unsigned kind, uint64_t key, uint64_t time_ns, mf_gpu_origin *origin)
{
    pthread_mutex_lock(&lock);
    size_t best = SIZE_MAX;
    if (capacity) {
        size_t mask = capacity - 1;
        for (size_t i = slot_of(key, kind, capacity); slots[i].kind; i = (i + 1) & mask) {
            const origin_slot *s = &slots[i];
            if (s->kind != kind || s->key != key)
                continue;
            if (window_holds(&s->origin, time_ns)) {
                best = i;
                break;
            }
            if (best == SIZE_MAX || s->origin.enter_ns < slots[best].origin.enter_ns)
                best = i;
        }
    }
    if (best != SIZE_MAX) {
        *origin = slots[best].origin;
        remove_at(best);
    }
    pthread_mutex_unlock(&lock);
    return best != SIZE_MAX;
}

size_t mf_gpu_origins_pending(void)
{
    pthread_mutex_lock(&lock);
    size_t n = count;
    pthread_mutex_unlock(&lock);
    return n;
}
