/*
 * translate.c - CUPTI activity records -> recorder events.
 *
 * The buffer-completed callback (capture.c) and the tests hand a buffer of
 * records to mf_gpu_process_buffer(); each record becomes one recorder event
 * on gpu/<deviceId>, with the timestamp CUPTI stamped through our timestamp
 * callback (already mf_clock_now's clock, so it is copied unchanged) and,
 * for allocations, the scope and thread that the API callback found at the
 * call's exit, taken back from origins.c by the block's address.  Untagged
 * allocations get the default scope "<unk>:", the translating thread's id
 * and, when CUPTI names it, the library that asked for the memory.  A
 * record without a usable timestamp never lands at time 0 (see gpu.h).
 * A module's __managed__ variables come twice: the driver's region for
 * them, then each variable, named, inside it; the variables become
 * sub-blocks of the region (the managed regions, below).
 */
#include <inttypes.h>
#include <pthread.h>
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

/* ---- timestamps ---------------------------------------------------------- */

/*
 * What one buffer's walk knows about time: the latest good GPU timestamp
 * seen by any walk (records that came without one take it), and how many
 * records of this buffer needed help.
 */
static uint64_t latest_good_ns;

typedef struct walk {
    size_t bad_times;
} walk;

static void saw_time(uint64_t t)
{
    uint64_t seen = __atomic_load_n(&latest_good_ns, __ATOMIC_RELAXED);
    while (t > seen &&
           !__atomic_compare_exchange_n(&latest_good_ns, &seen, t, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

/* A record's time: its own if it has one, else the fallback (its call's
 * exit, when known), else the latest good GPU time, else now. */
static uint64_t record_time(walk *w, uint64_t t, uint64_t fallback)
{
    if (t) {
        saw_time(t);
        return t;
    }
    w->bad_times++;
    if (fallback)
        return fallback;
    uint64_t latest = __atomic_load_n(&latest_good_ns, __ATOMIC_RELAXED);
    return latest ? latest : mf_clock_now();
}

/* ---- the managed regions -------------------------------------------------- */

/*
 * Seen on an H100 (CUDA 13.0): a module's __managed__ variable is reported
 * twice at one address, first as an unnamed managed allocation with no API
 * call behind it (the region the driver allocates for the module's managed
 * variables, at module load), then as the named variable.  Two blocks at
 * one address, neither freed, read as a lost free.  So unnamed managed
 * allocations without an API call are remembered (a few: one per module),
 * and a named record that lies inside one of them is written as a
 * sub-block of it.  Releases forget them.  Under the lock: buffers may be
 * walked on CUPTI's thread and on a flushing thread at once.
 */
#define MANAGED_REGIONS 64
typedef struct managed_region {
    uint64_t addr, bytes;
    uint16_t device;
} managed_region;
static managed_region regions[MANAGED_REGIONS];
static unsigned n_regions; /* written under regions_lock, read unlocked first */
static pthread_mutex_t regions_lock = PTHREAD_MUTEX_INITIALIZER;

static void region_remember(uint16_t device, uint64_t addr, uint64_t bytes)
{
    pthread_mutex_lock(&regions_lock);
    if (n_regions < MANAGED_REGIONS) /* full: the variables stay blocks of their own */
        regions[n_regions++] = (managed_region){ addr, bytes, device };
    pthread_mutex_unlock(&regions_lock);
}

/* Whether [addr, addr + bytes) lies inside a remembered region of device. */
static int region_holds(uint16_t device, uint64_t addr, uint64_t bytes)
{
    if (!__atomic_load_n(&n_regions, __ATOMIC_RELAXED))
        return 0;
    int inside = 0;
    pthread_mutex_lock(&regions_lock);
    for (unsigned i = 0; i < n_regions && !inside; i++)
        inside = regions[i].device == device && addr >= regions[i].addr &&
                 bytes <= regions[i].bytes && addr - regions[i].addr <= regions[i].bytes - bytes;
    pthread_mutex_unlock(&regions_lock);
    return inside;
}

static void region_forget(uint16_t device, uint64_t addr)
{
    if (!__atomic_load_n(&n_regions, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&regions_lock);
    for (unsigned i = 0; i < n_regions; i++) {
        if (regions[i].device == device && regions[i].addr == addr) {
            regions[i] = regions[--n_regions];
            break;
        }
    }
    pthread_mutex_unlock(&regions_lock);
}

/* The flags of a driver-made allocation (no API call behind it), and what
 * the managed regions make of it: remembered when it is an unnamed managed
 * one, a sub-block when it is a named one inside a region. */
static unsigned driver_block_flags(const CUpti_ActivityMemory4 *m, unsigned flags)
{
    uint16_t device = gpu_device(m->deviceId);
    int named = m->name && *m->name;
    if (named && region_holds(device, m->address, m->bytes))
        return flags | MF_FLAG_SUBBLOCK;
    if (!named && (flags & MF_MEMKIND_MASK) >> MF_MEMKIND_SHIFT == MF_MEM_MANAGED)
        region_remember(device, m->address, m->bytes);
    return flags;
}

/* ---- memory -------------------------------------------------------------- */

static unsigned memory_flags(const CUpti_ActivityMemory4 *m)
{
    unsigned kind = mf_gpu_memory_kind(m->memoryKind, m->memoryPoolConfig.memoryPoolType);
    return kind << MF_MEMKIND_SHIFT | (m->isAsync ? MF_FLAG_ASYNC : 0u);
}

/* The snapshot taken at the API's exit, stamped with the event. */
static void write_sample(const mf_gpu_origin *o, uint64_t time_ns)
{
    if (!o->has_sample)
        return;
    uint64_t value[MF_SAMPLE_VALUES] = { 0 };
    value[MF_SAMPLE_GPU_USED] = o->sample[0];
    value[MF_SAMPLE_GPU_TOTAL] = o->sample[1];
    mf_recorder_sample(o->device, time_ns, value);
}

static void translate_release(walk *w, const CUpti_ActivityMemory4 *m)
{
    mf_gpu_origin o;
    int known = mf_gpu_origin_take(MF_GPU_KEY_FREE, m->address, m->timestamp, &o);
    uint64_t t = record_time(w, m->timestamp, known ? o.exit_ns : 0);
    region_forget(gpu_device(m->deviceId), m->address);
    mf_recorder_free_event(gpu_device(m->deviceId), memory_flags(m), t, m->address);
    if (known)
        write_sample(&o, t);
}

static void translate_allocation(walk *w, const CUpti_ActivityMemory4 *m)
{
    mf_gpu_origin o;
    int known = mf_gpu_origin_take(MF_GPU_KEY_ALLOC, m->address, m->timestamp, &o) ||
                mf_gpu_origin_take(MF_GPU_KEY_CORRELATION, m->correlationId, m->timestamp, &o);
    uint64_t t = record_time(w, m->timestamp, known ? o.exit_ns : 0);
    uint32_t name = mf_gpu_memory_name(m->name, m->source, known);
    unsigned flags = known ? memory_flags(m) : driver_block_flags(m, memory_flags(m));
    mf_recorder_alloc_with_stack(gpu_device(m->deviceId), flags, t, m->address,
                                 m->bytes, m->bytes, known ? o.scope : MF_STRING_DEFAULT_SCOPE,
                                 name, known ? o.tid : mf_recorder_thread_id(),
                                 known ? o.stack : 0);
    if (known)
        write_sample(&o, t);
}

static void translate_memory(walk *w, const CUpti_ActivityMemory4 *m)
{
    if (mf_gpu_api_recorded(m->correlationId))
        return; /* a mapping or registration: vmm.c recorded it at the API */
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        translate_release(w, m);
    else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
        translate_allocation(w, m);
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

static void translate_pool(walk *w, const CUpti_ActivityMemoryPool3 *p)
{
    unsigned op = pool_op(p->memoryPoolOperationType);
    if (op)
        mf_recorder_pool(gpu_device(p->deviceId), op, record_time(w, p->timestamp, 0),
                         p->address, p->size, p->releaseThreshold);
}

/* ---- devices ------------------------------------------------------------- */

static uint64_t devices_described[4]; /* one bit per device index */

static void translate_device(const CUpti_ActivityDevice5 *d)
{
    if (!d->isCudaVisible || d->id > 255)
        return;
    uint64_t bit = 1ull << (d->id % 64);
    if (__atomic_fetch_or(&devices_described[d->id / 64], bit, __ATOMIC_ACQ_REL) & bit)
        return;
    uint32_t mig = d->isMigEnabled ? (d->gpuInstanceId << 16 | (d->computeInstanceId & 0xffff))
                                   : UINT32_MAX;
    mf_recorder_device_info(gpu_device(d->id), intern_text(d->name),
                            (const uint8_t *)d->uuid.bytes, d->globalMemorySize, mig,
                            mf_gpu_pci_bus(d->id));
}

/* ---- kernels, copies, sets ----------------------------------------------- */

/* A span CUPTI could not time (start 0, or end before start) is left out. */
static int span_ok(walk *w, uint64_t start, uint64_t end)
{
    if (start && end >= start) {
        saw_time(end);
        return 1;
    }
    w->bad_times++;
    return 0;
}

static void translate_kernel(walk *w, const CUpti_ActivityKernel10 *k)
{
    if (span_ok(w, k->start, k->end))
        mf_recorder_activity(gpu_device(k->deviceId), MF_ACT_KERNEL, k->start, k->end, 0,
                         k->streamId, mf_gpu_kernel_name(k->name), k->correlationId);
}

static void translate_memcpy(walk *w, const CUpti_ActivityMemcpy6 *c)
{
    if (span_ok(w, c->start, c->end))
        mf_recorder_activity(gpu_device(c->deviceId), MF_ACT_MEMCPY, c->start, c->end, c->bytes,
                         c->streamId, intern_text(mf_gpu_memcpy_kind_name(c->copyKind)),
                         c->correlationId);
}

static void translate_memcpy_peer(walk *w, const CUpti_ActivityMemcpyPtoP4 *c)
{
    if (span_ok(w, c->start, c->end))
        mf_recorder_activity(gpu_device(c->deviceId), MF_ACT_MEMCPY, c->start, c->end, c->bytes,
                         c->streamId, intern_text(mf_gpu_memcpy_kind_name(c->copyKind)),
                         c->correlationId);
}

static void translate_memset(walk *w, const CUpti_ActivityMemset4 *s)
{
    if (span_ok(w, s->start, s->end))
        mf_recorder_activity(gpu_device(s->deviceId), MF_ACT_MEMSET, s->start, s->end, s->bytes,
                         s->streamId, intern_text("memset"), s->correlationId);
}

static void translate_record(walk *w, const CUpti_Activity *record)
{
    switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        translate_memory(w, (const CUpti_ActivityMemory4 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
        translate_pool(w, (const CUpti_ActivityMemoryPool3 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
        translate_device((const CUpti_ActivityDevice5 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        translate_kernel(w, (const CUpti_ActivityKernel10 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        translate_memcpy(w, (const CUpti_ActivityMemcpy6 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        translate_memcpy_peer(w, (const CUpti_ActivityMemcpyPtoP4 *)record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        translate_memset(w, (const CUpti_ActivityMemset4 *)record);
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
    walk w = { 0 };
    CUptiResult result;
    while ((result = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) {
        translate_record(&w, record);
        walked++;
    }
    if (result != CUPTI_ERROR_MAX_LIMIT_REACHED)
        report_bad_buffer(result, buffer, record, walked);
    if (w.bad_times)
        mf_recorder_note(MF_NOTE_GPU_BAD_TIME, w.bad_times);
    MF_INTERNAL_END();
    return walked;
}
