/*
 * intern.c - an open-addressing hash table of strings, stored in mmap'd
 * arenas so that it never calls malloc (it runs inside allocator hooks).
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "intern.h"
#include "log_format.h"

#define ARENA_SIZE (1u << 20)

typedef struct entry {
    const char *text;
    uint32_t len;
    uint32_t hash;
} entry;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;        /* by id; entries[0] unused */
static uint32_t n_entries;    /* ids in use + 1 */
static uint32_t cap_entries;
static uint32_t *slots;       /* hash -> id, 0 = empty */
static uint32_t n_slots;
static char *arena;
static size_t arena_left;

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ? h : 1;
}

static char *arena_copy(const char *text, size_t len)
{
    if (len + 1 > arena_left) {
        size_t size = len + 1 > ARENA_SIZE ? len + 1 : ARENA_SIZE;
        char *a = map_zeroed(size);
        if (!a)
            return NULL;
        arena = a;
        arena_left = size;
    }
    char *copy = arena;
    memcpy(copy, text, len);
    copy[len] = 0;
    arena += len + 1;
    arena_left -= len + 1;
    return copy;
}

static int grow_entries(void)
{
    uint32_t cap = cap_entries ? cap_entries * 2 : 1024;
    entry *e = map_zeroed(cap * sizeof *e);
    if (!e)
        return -1;
    if (entries) {
        memcpy(e, entries, n_entries * sizeof *e);
        munmap(entries, cap_entries * sizeof *e);
    }
    entries = e;
    cap_entries = cap;
    return 0;
}

static void slot_insert(uint32_t *table, uint32_t size, uint32_t hash, uint32_t id)
{
    uint32_t i = hash & (size - 1);
    while (table[i])
        i = (i + 1) & (size - 1);
    table[i] = id;
}

static int grow_slots(void)
{
    uint32_t size = n_slots ? n_slots * 2 : 4096;
    uint32_t *t = map_zeroed(size * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t id = 1; id < n_entries; id++)
        slot_insert(t, size, entries[id].hash, id);
    if (slots)
        munmap(slots, n_slots * sizeof *slots);
    slots = t;
    n_slots = size;
    return 0;
}

static uint32_t find(const char *text, size_t len, uint32_t hash)
{
    if (!n_slots)
        return 0;
    for (uint32_t i = hash & (n_slots - 1); slots[i]; i = (i + 1) & (n_slots - 1)) {
        const entry *e = &entries[slots[i]];
        if (e->hash == hash && e->len == len && memcmp(e->text, text, len) == 0)
            return slots[i];
    }
    return 0;
}

static uint32_t add(const char *text, size_t len, uint32_t hash)
{
    if (n_entries == 0)
        __atomic_store_n(&n_entries, 1, __ATOMIC_RELEASE); /* id 0 is "unknown" */
    if (n_entries + 1 > cap_entries && grow_entries() < 0)
        return 0;
    if ((n_entries + 1) * 2 > n_slots && grow_slots() < 0)
        return 0;
    char *copy = arena_copy(text, len);
    if (!copy)
        return 0;
    uint32_t id = n_entries;
    entries[id] = (entry){ copy, (uint32_t)len, hash };
    __atomic_store_n(&n_entries, id + 1, __ATOMIC_RELEASE);
    slot_insert(slots, n_slots, hash, id);
    return id;
}

uint32_t mf_intern_lookup(const char *text, size_t len, int *is_new)
{
    if (len > MF_STRING_MAX_LEN)
        len = MF_STRING_MAX_LEN;
    uint32_t hash = hash_bytes(text, len);
    pthread_mutex_lock(&table_lock);
    if (n_entries == 0) /* id 1 is always the default scope */
        add("<unk>:", 6, hash_bytes("<unk>:", 6));
    uint32_t id = find(text, len, hash);
    *is_new = 0;
    if (!id) {
        id = add(text, len, hash);
        *is_new = id != 0;
    }
    pthread_mutex_unlock(&table_lock);
    return id;
}

const char *mf_intern_text(uint32_t id, uint32_t *len)
{
    if (id == MF_STRING_DEFAULT_SCOPE && __atomic_load_n(&n_entries, __ATOMIC_ACQUIRE) == 0) {
        int is_new;
        mf_intern_lookup("<unk>:", 6, &is_new);
    }
    pthread_mutex_lock(&table_lock);
    const char *text = NULL;
    if (id > 0 && id < n_entries) {
        text = entries[id].text;
        if (len)
            *len = entries[id].len;
    }
    pthread_mutex_unlock(&table_lock);
    return text;
}

uint32_t mf_intern_count(void)
{
    pthread_mutex_lock(&table_lock);
    uint32_t n = n_entries ? n_entries - 1 : 0;
    pthread_mutex_unlock(&table_lock);
    return n;
}

void mf_intern_lock(void) { pthread_mutex_lock(&table_lock); }
void mf_intern_unlock(void) { pthread_mutex_unlock(&table_lock); }

void mf_intern_after_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    table_lock = fresh;
}
