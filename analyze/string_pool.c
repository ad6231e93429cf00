/*
 * string_pool.c - the string pool: texts copied into 64 KiB blocks (a longer
 * text gets a block of its own), an array of text pointers by id, and an
 * open-addressing hash table from text to id.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "string_pool.h"

#define BLOCK_BYTES (64u << 10)

typedef struct block {
    struct block *next;
    size_t used, size;
    char bytes[];
} block;

struct mf_strings {
    const char **texts;      /* by id */
    uint64_t *hashes;        /* by id */
    uint32_t n;
    size_t cap;
    uint32_t *slots;         /* id + 1; 0 = empty */
    size_t n_slots;          /* power of two */
    block *blocks;
};

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

/* A copy of len bytes (NUL added) in the pool's blocks, or NULL. */
static char *store(mf_strings *p, const char *text, size_t len)
{
    block *b = p->blocks;
    if (!b || b->size - b->used < len + 1) {
        size_t size = len + 1 > BLOCK_BYTES / 4 ? len + 1 : BLOCK_BYTES;
        block *fresh = malloc(sizeof *fresh + size);
        if (!fresh)
            return NULL;
        fresh->used = 0;
        fresh->size = size;
        if (size == BLOCK_BYTES || !b) {
            fresh->next = b;
            p->blocks = fresh;
        } else {            /* a big text: keep filling the current block */
            fresh->next = b->next;
            b->next = fresh;
        }
        b = fresh;
    }
    char *s = b->bytes + b->used;
    memcpy(s, text, len);
    s[len] = 0;
    b->used += len + 1;
    return s;
}

static int rehash(mf_strings *p, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t id = 0; id < p->n; id++) {
        size_t i = p->hashes[id] & (n_slots - 1);
        while (slots[i])
            i = (i + 1) & (n_slots - 1);
        slots[i] = id + 1;
    }
    free(p->slots);
    p->slots = slots;
    p->n_slots = n_slots;
    return 0;
}

static uint32_t add(mf_strings *p, const char *text, size_t len, uint64_t h)
{
    if (((size_t)p->n + 1) * 2 > p->n_slots && rehash(p, p->n_slots ? 2 * p->n_slots : 1024) < 0)
        return MF_STRINGS_FAILED;
    size_t cap = p->cap;
    if (mf_grow((void **)&p->texts, &cap, (size_t)p->n + 1, sizeof *p->texts) < 0)
        return MF_STRINGS_FAILED;
    cap = p->cap;
    if (mf_grow((void **)&p->hashes, &cap, (size_t)p->n + 1, sizeof *p->hashes) < 0)
        return MF_STRINGS_FAILED;
    p->cap = cap;
    char *copy = store(p, text, len);
    if (!copy)
        return MF_STRINGS_FAILED;
    uint32_t id = p->n++;
    p->texts[id] = copy;
    p->hashes[id] = h;
    size_t i = h & (p->n_slots - 1);
    while (p->slots[i])
        i = (i + 1) & (p->n_slots - 1);
    p->slots[i] = id + 1;
    return id;
}

uint32_t mf_strings_intern(mf_strings *p, const char *text, size_t len)
{
    const char *nul = memchr(text, 0, len);
    if (nul)
        len = (size_t)(nul - text);
    uint64_t h = hash_bytes(text, len);
    for (size_t i = p->n_slots ? h & (p->n_slots - 1) : 0; p->n_slots && p->slots[i];
         i = (i + 1) & (p->n_slots - 1)) {
        uint32_t id = p->slots[i] - 1;
        if (p->hashes[id] == h && strncmp(p->texts[id], text, len) == 0 && !p->texts[id][len])
            return id;
    }
    if (p->n == MF_STRINGS_FAILED - 1)
        return MF_STRINGS_FAILED;
    return add(p, text, len, h);
}

mf_strings *mf_strings_new(void)
{
    mf_strings *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (add(p, "unknown", 7, hash_bytes("unknown", 7)) != 0 ||
        add(p, "<unk>:", 6, hash_bytes("<unk>:", 6)) != 1) {
        mf_strings_free(p);
        return NULL;
    }
    return p;
}

void mf_strings_free(mf_strings *p)
{
    if (!p)
        return;
    while (p->blocks) {
        block *next = p->blocks->next;
        free(p->blocks);
        p->blocks = next;
    }
    free(p->texts);
    free(p->hashes);
    free(p->slots);
    free(p);
}

const char *mf_strings_get(const mf_strings *p, uint32_t id)
{
    return p && id < p->n ? p->texts[id] : "unknown";
}

uint32_t mf_strings_count(const mf_strings *p)
{
    return p ? p->n : 0;
}

int mf_strings_replace(mf_strings *p, uint32_t id, const char *text, size_t len)
{
    if (id < 2 || id >= p->n)
        return 0;
    const char *nul = memchr(text, 0, len);
    if (nul)
        len = (size_t)(nul - text);
    char *copy = store(p, text, len);
    if (!copy)
        return -1;
    p->texts[id] = copy;
    /* the hash table keeps finding the old text's slot under its old hash;
     * lookups of the new text go to a fresh id, as documented */
    return 0;
}
