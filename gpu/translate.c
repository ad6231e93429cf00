/*
 * translate.c - CUPTI activity records -> recorder events.
 *
 * The buffer-completed callback (capture.c) and the tests hand a buffer of
 * records to mf_gpu_process_buffer(); each record becomes one recorder event
 * on gpu/<deviceId>, with the timestamp CUPTI stamped through our timestamp
 * callback (already mf_clock_now's clock, so it is copied unchanged) and,
 * for allocations, the scope and thread that the API callback remembered
 * under the record's correlationId (correlation.c).  Untagged allocations
 * get the default scope "<unk>:" and the translating thread's id.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"

unsigned mf_gpu_memory_kind(unsigned cupti_memory_kind, unsigned pool_type)
{
    if (pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL ||
        pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED)
        return MF_MEM_POOL;
    switch (cupti_memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
        return MF_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
        return MF_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
        return MF_MEM_MANAGED;
    default:
        return MF_MEM_OTHER;
    }
}

const char *mf_gpu_memcpy_kind_name(unsigned copy_kind)
{
    static const char *const names[] = {
        [CUPTI_ACTIVITY_MEMCPY_KIND_HTOD] = "HtoD", [CUPTI_ACTIVITY_MEMCPY_KIND_DTOH] = "DtoH",
        [CUPTI_ACTIVITY_MEMCPY_KIND_HTOA] = "HtoA", [CUPTI_ACTIVITY_MEMCPY_KIND_ATOH] = "AtoH",
        [CUPTI_ACTIVITY_MEMCPY_KIND_ATOA] = "AtoA", [CUPTI_ACTIVITY_MEMCPY_KIND_ATOD] = "AtoD",
        [CUPTI_ACTIVITY_MEMCPY_KIND_DTOA] = "DtoA", [CUPTI_ACTIVITY_MEMCPY_KIND_DTOD] = "DtoD",
        [CUPTI_ACTIVITY_MEMCPY_KIND_HTOH] = "HtoH", [CUPTI_ACTIVITY_MEMCPY_KIND_PTOP] = "PtoP",
    };
    if (copy_kind < sizeof names / sizeof names[0] && names[copy_kind])
        return names[copy_kind];
    return "memcpy";
}

static uint16_t gpu_device(uint32_t device_id)
{
    return MF_DEVICE(MF_DEVICE_GPU, device_id);
}

static uint32_t intern_text(const char *text)
{
    return text ? mf_recorder_intern(text, strlen(text)) : MF_STRING_UNKNOWN;
}

static unsigned memory_flags(const CUpti_ActivityMemory4 *m)
{
    unsigned kind = mf_gpu_memory_kind(m->memoryKind, m->memoryPoolConfig.memoryPoolType);
    return kind << MF_MEMKIND_SHIFT | (m->isAsync ? MF_FLAG_ASYNC : 0u);
}

static void translate_memory(const CUpti_ActivityMemory4 *m)
{
    uint16_t device = gpu_device(m->deviceId);
    unsigned flags = memory_flags(m);
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
        mf_recorder_free_event(device, flags, m->timestamp, m->address);
        return;
    }
    if (m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        return;
    mf_gpu_origin origin;
    if (!mf_gpu_correlation_get(m->correlationId, &origin)) {
        origin.scope = MF_STRING_DEFAULT_SCOPE;
        origin.tid = mf_recorder_thread_id();
    }
    mf_gpu_sampler_set_context(mf_gpu_context_get(m->contextId));
    mf_recorder_alloc_event(device, flags, m->timestamp, m->address, m->bytes, m->bytes,
                            origin.scope, MF_STRING_UNKNOWN, origin.tid);
    mf_gpu_sampler_set_context(NULL);
}

static unsigned pool_op(unsigned cupti_op)
{
    switch (cupti_op) {
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
        return MF_POOL_CREATED;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
        return MF_POOL_DESTROYED;
    case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
        return MF_POOL_TRIMMED;
    default:
        return 0;
    }
}

static void translate_pool(const CUpti_ActivityMemoryPool3 *p)
{
    unsigned op = pool_op(p->memoryPoolOperationType);
    if (op)
        mf_recorder_pool(gpu_device(p->deviceId), op, p->timestamp, p->address, p->size,
                         p->releaseThreshold);
}

static void translate_kernel(const CUpti_ActivityKernel10 *k)
{
    mf_recorder_activity(gpu_device(k->deviceId), MF_ACT_KERNEL, k->start, k->end, 0,
                         k->streamId, mf_gpu_kernel_name(k->name), k->correlationId);
}

static void translate_memcpy(const CUpti_ActivityMemcpy6 *c)
{
    mf_recorder_activity(gpu_device(c->deviceId), MF_ACT_MEMCPY, c->start, c->end, c->bytes,
                         c->streamId, intern_text(mf_gpu_memcpy_kind_name(c->copyKind)),
                         c->correlationId);
}

static void translate_memcpy_peer(const CUpti_ActivityMemcpyPtoP4 *c)
{
    mf_recorder_activity(gpu_device(c->deviceId), MF_ACT_MEMCPY, c->start, c->end, c->bytes,
                         c->streamId, intern_text(mf_gpu_memcpy_kind_name(c->copyKind)),
                         c->correlationId);
}

static void translate_memset(const CUpti_ActivityMemset4 *s)
{
    mf_recorder_activity(gpu_device(s->deviceId), MF_ACT_MEMSET, s->start, s->end, s->bytes,
                         s->streamId, intern_text("memset"), s->correlationId);
}

static void translate_record(const CUpti_Activity *record)
{
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        translate_memory((const CUpti_ActivityMemory4 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
        translate_pool((const CUpti_ActivityMemoryPool3 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        translate_kernel((const CUpti_ActivityKernel10 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        translate_memcpy((const CUpti_ActivityMemcpy6 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        translate_memcpy_peer((const CUpti_ActivityMemcpyPtoP4 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        translate_memset((const CUpti_ActivityMemset4 *)record);
        break;
    default: /* EXTERNAL_CORRELATION and anything else: nothing to record */
        break;
    }
}

static void report_bad_buffer(CUptiResult result, const uint8_t *buffer,
                              const CUpti_Activity *last, size_t walked)
{
    const char *text = "?";
    cuptiGetResultString(result, &text);
    fprintf(stderr, "memflow: CUPTI activity buffer: %s after %zu records (byte offset %td); "
            "the rest of this buffer is skipped\n", text, walked,
            last ? (const uint8_t *)last - buffer : (ptrdiff_t)0);
}

size_t mf_gpu_process_buffer(uint8_t *buffer, size_t valid_size)
{
    if (!buffer || valid_size == 0 || !mf_recorder_log_open())
        return 0;
    MF_INTERNAL_BEGIN();
    CUpti_Activity *record = NULL;
    size_t walked = 0;
    CUptiResult result;
    while ((result = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
        translate_record(record);
        walked++;
    }
    if (result != CUPTI_ERROR_MAX_LIMIT_REACHED)
        report_bad_buffer(result, buffer, record, walked);
    MF_INTERNAL_END();
    return walked;
}
