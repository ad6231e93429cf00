/*
 * correlation.c - joins a CUPTI activity record to the thread and scope that
 * asked for the memory.
 *
 * The API callback (capture.c) runs on the calling thread at the entry of an
 * allocation function and puts correlationId -> (scope, tid) here; the
 * MEMORY2 record carrying the same correlationId arrives later on CUPTI's
 * buffer thread, and translate.c gets the origin back.  Lock-free: each slot
 * is two 64-bit words, each tagged with the correlation id, written and read
 * atomically; a reader that sees two different tags saw a concurrent put and
 * reports a miss (the record is then untagged, never wrongly tagged).
 *
 * Context handles (for cuMemGetInfo in sampler.c) are kept the same way,
 * keyed by contextUid.
 */
#include "gpu.h"

typedef struct slot {
    uint64_t scope_word; /* correlation id << 32 | scope id */
    uint64_t tid_word;   /* correlation id << 32 | thread id */
} slot;

static slot table[MF_GPU_CORRELATION_SLOTS];

#define CONTEXT_SLOTS 256u
typedef struct context_slot {
    uint64_t id_plus_one; /* 0 = empty */
    void *context;
} context_slot;

static context_slot contexts[CONTEXT_SLOTS];

static uint64_t tagged(uint32_t correlation_id, uint32_t value)
{
    return (uint64_t)correlation_id << 32 | value;
}

void mf_gpu_correlation_put(uint32_t correlation_id, mf_gpu_origin origin)
{
    if (correlation_id == 0)
        return;
    slot *s = &table[correlation_id % MF_GPU_CORRELATION_SLOTS];
    __atomic_store_n(&s->tid_word, tagged(correlation_id, origin.tid), __ATOMIC_RELEASE);
    __atomic_store_n(&s->scope_word, tagged(correlation_id, origin.scope), __ATOMIC_RELEASE);
}

int mf_gpu_correlation_get(uint32_t correlation_id, mf_gpu_origin *origin)
{
    if (correlation_id == 0)
        return 0;
    slot *s = &table[correlation_id % MF_GPU_CORRELATION_SLOTS];
    uint64_t scope_word = __atomic_load_n(&s->scope_word, __ATOMIC_ACQUIRE);
    uint64_t tid_word = __atomic_load_n(&s->tid_word, __ATOMIC_ACQUIRE);
    if ((uint32_t)(scope_word >> 32) != correlation_id ||
        (uint32_t)(tid_word >> 32) != correlation_id)
        return 0;
    origin->scope = (uint32_t)scope_word;
    origin->tid = (uint32_t)tid_word;
    return 1;
}

void mf_gpu_context_put(uint32_t context_id, void *context)
{
    context_slot *s = &contexts[context_id % CONTEXT_SLOTS];
    __atomic_store_n(&s->context, context, __ATOMIC_RELEASE);
    __atomic_store_n(&s->id_plus_one, (uint64_t)context_id + 1, __ATOMIC_RELEASE);
}

void *mf_gpu_context_get(uint32_t context_id)
{
    context_slot *s = &contexts[context_id % CONTEXT_SLOTS];
    if (__atomic_load_n(&s->id_plus_one, __ATOMIC_ACQUIRE) != (uint64_t)context_id + 1)
        return NULL;
    return __atomic_load_n(&s->context, __ATOMIC_ACQUIRE);
}
