/*
 * nvtx_mem.c - the NVTX memory extension (nvToolsExtMem.h) as sub-blocks:
 * the second half of the NVTX injection library libmemflow-nvtx.so.
 *
 * A program that manages its own pools (PyTorch's caching allocator, RMM, a
 * CPU arena) describes them with nvtxMemHeapRegister (a range a
 * sub-allocator owns) and nvtxMemRegionsRegister (what it hands out).  At
 * the first such call the NVTX headers call InitializeInjectionNvtxExtension
 * of the library NVTX_INJECTION64_PATH names (this one under `memflow run`)
 * once per extension module; for the memory module it fills the slots below.
 * Then:
 *
 *   nvtxMemRegionsRegister     ALLOC of a sub-block (MF_FLAG_SUBBLOCK): now,
 *                              the calling thread's scope, its stack with
 *                              --stacks, recorded on cpu/0
 *   nvtxMemRegionsResize       FREE + ALLOC of the same address (MF_FLAG_REALLOC)
 *   nvtxMemRegionsUnregister   FREE
 *   nvtxMemHeapReset           FREE of every region still registered in the
 *   nvtxMemHeapUnregister      heap, and a POOL record (MF_POOL_HEAP_*)
 *   nvtxMemHeapRegister        POOL MF_POOL_HEAP_REGISTERED (address, size):
 *                              the heap is memory already recorded (malloc'ed
 *                              or cudaMalloc'ed), so it is not a block
 *   nvtxMemRegionsName         TRACE MF_TRACE_REGION_NAME (address, name)
 *   nvtxMemPermissionsCreate, nvtxMemCudaGet*Permissions  a dummy handle
 *
 * The runtime cannot tell which device holds an address, so sub-blocks are
 * recorded on cpu/0 and the analysis places one that lies inside a live GPU
 * block on that block's device (analyze/model/model_subblocks.c).  Regions are
 * kept in a small table (address -> size, heap) behind one mutex: this is
 * not the malloc hot path, and HeapReset must find a heap's regions.
 * Only NVTX_MEM_TYPE_VIRTUAL_ADDRESS regions have an address; others
 * (CUDA arrays) are ignored.  Modules other than the memory module are left
 * unfilled, so their functions stay no-ops.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtMem.h>

#include "memflow.h"
#include "nvtx.h"
#include "recorder.h"

#define SUB_DEVICE MF_DEVICE(MF_DEVICE_CPU, 0)

/* ---- the regions registered: address -> size, heap ------------------------------ */

typedef struct region {
    uint64_t addr;            /* 0 = empty slot */
    uint64_t size;
    uintptr_t heap;
} region;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static region *slots;         /* open addressing, linear probing; a power of two */
static size_t n_slots, n_used;

static size_t slot_of(uint64_t addr)
{
    uint64_t x = addr * 0x9e3779b97f4a7c15ull;
    return (size_t)(x ^ x >> 29) & (n_slots - 1);
}

/* The slot holding addr, or the empty slot where it would go. */
static region *find(uint64_t addr)
{
    size_t i = slot_of(addr);
    while (slots[i].addr && slots[i].addr != addr)
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

/* Room for one more region; -1 when out of memory.  Memflow's own memory. */
static int reserve_one(void)
{
    if (n_slots && (n_used + 1) * 4 <= n_slots * 3)
        return 0;
    size_t n = n_slots ? 2 * n_slots : 256;
    MF_INTERNAL_BEGIN();
    region *fresh = calloc(n, sizeof *fresh);
    MF_INTERNAL_END();
    if (!fresh)
        return -1;
    region *old = slots;
    size_t n_old = n_slots;
    slots = fresh;
    n_slots = n;
    for (size_t i = 0; i < n_old; i++)
        if (old[i].addr)
            *find(old[i].addr) = old[i];
    MF_INTERNAL_BEGIN();
    free(old);
    MF_INTERNAL_END();
    return 0;
}

/* Empty slot r, moving later entries of its probe run back (no tombstones). */
static void remove_slot(region *r)
{
    size_t hole = (size_t)(r - slots);
    r->addr = 0;
    n_used--;
    for (size_t i = (hole + 1) & (n_slots - 1); slots[i].addr; i = (i + 1) & (n_slots - 1)) {
        size_t home = slot_of(slots[i].addr);
        /* the entry may move to the hole if its home is not in (hole, i] */
        if ((i - home) % n_slots >= (i - hole) % n_slots) {
            slots[hole] = slots[i];
            slots[i].addr = 0;
            hole = i;
        }
    }
}

/* ---- recording ------------------------------------------------------------------ */

static void record_alloc(uint64_t addr, uint64_t size, unsigned flags)
{
    mf_recorder_alloc_with_stack(SUB_DEVICE, MF_FLAG_SUBBLOCK | flags, 0, addr, size, size, 0,
                                 MF_STRING_UNKNOWN, 0, mf_recorder_stack(0));
}

static void record_free(uint64_t addr, unsigned flags)
{
    mf_recorder_free_event(SUB_DEVICE, MF_FLAG_SUBBLOCK | flags, 0, addr);
}

/* A region at addr in heap (a register of a live address ends the old one). */
static void add_region(uintptr_t heap, uint64_t addr, uint64_t size)
{
    pthread_mutex_lock(&lock);
    if (addr && reserve_one() == 0) {
        region *r = find(addr);
        if (r->addr)
            record_free(addr, 0);
        else
            n_used++;
        *r = (region){ addr, size, heap };
        record_alloc(addr, size, 0);
    }
    pthread_mutex_unlock(&lock);
}

static void drop_region(uint64_t addr)
{
    pthread_mutex_lock(&lock);
    region *r = n_slots && addr ? find(addr) : NULL;
    if (r && r->addr) {
        record_free(addr, 0);
        remove_slot(r);
    }
    pthread_mutex_unlock(&lock);
}

static void resize_region(uint64_t addr, uint64_t size)
{
    pthread_mutex_lock(&lock);
    region *r = n_slots && addr ? find(addr) : NULL;
    if (r && r->addr) {
        record_free(addr, MF_FLAG_REALLOC);
        r->size = size;
        record_alloc(addr, size, MF_FLAG_REALLOC);
    }
    pthread_mutex_unlock(&lock);
}

/* Every region of heap ends. */
static void drop_heap_regions(uintptr_t heap)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_slots;) {
        if (slots[i].addr && slots[i].heap == heap) {
            record_free(slots[i].addr, 0);
            remove_slot(&slots[i]);   /* may move a later entry into slot i */
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* ---- heaps -------------------------------------------------------------------- */

/* Handles of heaps that have no address (not virtual memory): unique, never
 * a valid pointer (odd, counting down from the top of the address space). */
static uintptr_t next_opaque = UINTPTR_MAX - 2;

static uintptr_t opaque_handle(void)
{
    return __atomic_fetch_sub(&next_opaque, 2, __ATOMIC_RELAXED);
}

/* A VIRTUAL_ADDRESS range descriptor of size bytes, or NULL. */
static const nvtxMemVirtualRangeDesc_t *va_range(uint32_t type, const void *desc, size_t size)
{
    return type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS && desc && size >= sizeof(nvtxMemVirtualRangeDesc_t)
               ? desc
               : NULL;
}

/* A heap in virtual memory is its address (the header's contract). */
static nvtxMemHeapHandle_t NVTX_API heap_register(nvtxDomainHandle_t domain,
                                                  const nvtxMemHeapDesc_t *desc)
{
    (void)domain;
    const nvtxMemVirtualRangeDesc_t *range =
        desc ? va_range(desc->type, desc->typeSpecificDesc, desc->typeSpecificDescSize) : NULL;
    if (!range || !range->ptr)
        return (nvtxMemHeapHandle_t)opaque_handle();
    mf_recorder_pool(SUB_DEVICE, MF_POOL_HEAP_REGISTERED, 0, (uintptr_t)range->ptr, range->size,
                     0);
    return (nvtxMemHeapHandle_t)range->ptr;
}

static int is_opaque(uintptr_t handle)
{
    return handle > __atomic_load_n(&next_opaque, __ATOMIC_RELAXED);
}

static void heap_end(nvtxMemHeapHandle_t heap, unsigned op)
{
    drop_heap_regions((uintptr_t)heap);
    if (!is_opaque((uintptr_t)heap))
        mf_recorder_pool(SUB_DEVICE, op, 0, (uintptr_t)heap, 0, 0);
}

static void NVTX_API heap_unregister(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap)
{
    (void)domain;
    heap_end(heap, MF_POOL_HEAP_UNREGISTERED);
}

static void NVTX_API heap_reset(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap)
{
    (void)domain;
    heap_end(heap, MF_POOL_HEAP_RESET);
}

/* ---- regions ------------------------------------------------------------------- */

/* Element i of a batch array whose elements are `size` bytes apart. */
static const void *element(const void *array, size_t size, size_t i)
{
    return (const char *)array + i * size;
}

/* Range i of a batch of region descriptors of type, or NULL when they are
 * not virtual-address ranges. */
static const nvtxMemVirtualRangeDesc_t *range_at(uint32_t type, const void *array, size_t size,
                                                 size_t i)
{
    return va_range(type, element(array, size, i), size);
}

static void NVTX_API regions_register(nvtxDomainHandle_t domain,
                                      const nvtxMemRegionsRegisterBatch_t *desc)
{
    (void)domain;
    if (!desc || !desc->regionDescElements)
        return;
    for (size_t i = 0; i < desc->regionCount; i++) {
        const nvtxMemVirtualRangeDesc_t *r = range_at(
            desc->regionType, desc->regionDescElements, desc->regionDescElementSize, i);
        if (!r)
            return;
        add_region((uintptr_t)desc->heap, (uintptr_t)r->ptr, r->size);
        if (desc->regionHandleElementsOut)
            desc->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)r->ptr;
    }
}

static void NVTX_API regions_resize(nvtxDomainHandle_t domain,
                                    const nvtxMemRegionsResizeBatch_t *desc)
{
    (void)domain;
    if (!desc || !desc->regionDescElements)
        return;
    for (size_t i = 0; i < desc->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *r = range_at(
            desc->regionType, desc->regionDescElements, desc->regionDescElementSize, i);
        if (!r)
            return;
        resize_region((uintptr_t)r->ptr, r->size);
    }
}

/* A region reference's address: a pointer, or a handle (this library's
 * handles of regions are their addresses). */
static uint64_t ref_address(uint32_t type, const nvtxMemRegionRef_t *ref)
{
    if (type == NVTX_MEM_REGION_REF_TYPE_POINTER)
        return (uintptr_t)ref->pointer;
    if (type == NVTX_MEM_REGION_REF_TYPE_HANDLE)
        return (uintptr_t)ref->handle;
    return 0;
}

static void NVTX_API regions_unregister(nvtxDomainHandle_t domain,
                                        const nvtxMemRegionsUnregisterBatch_t *desc)
{
    (void)domain;
    if (!desc || !desc->refElements || desc->refElementSize < sizeof(nvtxMemRegionRef_t))
        return;
    for (size_t i = 0; i < desc->refCount; i++)
        drop_region(ref_address(desc->refType,
                                element(desc->refElements, desc->refElementSize, i)));
}

static void NVTX_API regions_name(nvtxDomainHandle_t domain, const nvtxMemRegionsNameBatch_t *desc)
{
    if (!desc || !desc->regionElements ||
        desc->regionElementSize < sizeof(nvtxMemRegionNameDesc_t))
        return;
    for (size_t i = 0; i < desc->regionCount; i++) {
        const nvtxMemRegionNameDesc_t *d =
            element(desc->regionElements, desc->regionElementSize, i);
        char buf[NAME_MAX_BYTES];
        const char *name = mf_nvtx_message(d->nameType, &d->name, buf, sizeof buf);
        uint64_t addr = ref_address(d->regionRefType, &d->region);
        if (addr)
            mf_recorder_trace(MF_TRACE_REGION_NAME, 0, addr, mf_nvtx_domain_id(domain),
                              mf_recorder_intern(name, strlen(name)), SUB_DEVICE);
    }
}

/* ---- permissions: not modelled; handles that are not NULL ------------------------- */

static nvtxMemPermissionsHandle_t NVTX_API permissions_create(nvtxDomainHandle_t domain,
                                                              int32_t flags)
{
    (void)domain;
    (void)flags;
    return (nvtxMemPermissionsHandle_t)opaque_handle();
}

static nvtxMemPermissionsHandle_t NVTX_API cuda_process_permissions(nvtxDomainHandle_t domain)
{
    return permissions_create(domain, 0);
}

static nvtxMemPermissionsHandle_t NVTX_API cuda_device_permissions(nvtxDomainHandle_t domain,
                                                                   int device)
{
    (void)device;
    return permissions_create(domain, 0);
}

/* ---- the extension entry point ------------------------------------------------------- */

typedef struct mem_slot {
    unsigned id;              /* NVTX3EXT_CBID_* */
    void *fn;
} mem_slot;

#define FN(f) ((void *)(f))

static const mem_slot mem_slots[] = {
    { NVTX3EXT_CBID_nvtxMemHeapRegister, FN(heap_register) },
    { NVTX3EXT_CBID_nvtxMemHeapUnregister, FN(heap_unregister) },
    { NVTX3EXT_CBID_nvtxMemHeapReset, FN(heap_reset) },
    { NVTX3EXT_CBID_nvtxMemRegionsRegister, FN(regions_register) },
    { NVTX3EXT_CBID_nvtxMemRegionsResize, FN(regions_resize) },
    { NVTX3EXT_CBID_nvtxMemRegionsUnregister, FN(regions_unregister) },
    { NVTX3EXT_CBID_nvtxMemRegionsName, FN(regions_name) },
    { NVTX3EXT_CBID_nvtxMemPermissionsCreate, FN(permissions_create) },
    { NVTX3EXT_CBID_nvtxMemCudaGetProcessWidePermissions, FN(cuda_process_permissions) },
    { NVTX3EXT_CBID_nvtxMemCudaGetDeviceWidePermissions, FN(cuda_device_permissions) },
};

/* Fill the memory module's slots: 1, or 0 when its layout is not the one
 * this library was built for (NVTX then makes every slot a no-op). */
static int fill_memory_module(nvtxExtModuleInfo_t *info)
{
    if (info->compatId != NVTX_EXT_COMPATID_MEM || info->segmentsCount < 1 || !info->segments)
        return 0;
    nvtxExtModuleSegment_t *seg = &info->segments[0];
    if (!seg->functionSlots)
        return 0;
    for (size_t i = 0; i < sizeof mem_slots / sizeof mem_slots[0]; i++)
        if (mem_slots[i].id < seg->slotCount)
            seg->functionSlots[mem_slots[i].id] = (intptr_t)mem_slots[i].fn;
    return 1;
}

/*
 * Called by the NVTX headers once per extension module, after the core
 * (InitializeInjectionNvtx2).  Returns 1 on success; 0 makes NVTX turn every
 * function of that module into a no-op.  Modules this library does not
 * serve (payload, counters, ...) get 1 with no slot filled: NVTX turns the
 * unfilled slots into no-ops, and nothing is unloaded.
 */
MF_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);

int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    if (!info || info->structSize < sizeof *info)
        return 0;
    if (info->moduleId == NVTX_EXT_MODULEID_MEM)
        return fill_memory_module(info);
    return 1;
}
