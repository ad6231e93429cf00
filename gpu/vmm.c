/*
 * vmm.c - GPU memory that CUPTI's memory records do not place at an
 * address: virtual memory management (cuMemCreate / cuMemMap / cuMemUnmap /
 * cuMemRelease, used by PyTorch's expandable segments, NCCL and others) and
 * host memory registered with cudaHostRegister.
 *
 * The API callback (api.c) calls in here at the exit of each such call, on
 * the calling thread, so the block carries that thread's scope and id and
 * the call's time.  Physical allocations are remembered by handle (size,
 * device); each cuMemMap is one block at its mapped address, memory kind
 * MF_MEM_VMM, on the handle's device; cuMemUnmap frees every mapping that
 * starts in its range (PyTorch unmaps several 2 MiB pages at once).
 * Registered host ranges are MF_MEM_PINNED blocks with MF_FLAG_REGISTERED.
 *
 * Three sorted arrays (mmap'd, doubling) under one mutex: handles by
 * handle, mappings by address, registered ranges by address.  Mappings
 * mostly come in address order, so inserting is mostly an append.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "gpu.h"

typedef struct range {
    uint64_t key;      /* handle, or start address */
    uint64_t size;
    uint32_t device;   /* device index */
    uint32_t pad;
} range;

typedef struct range_list {
    range *items;
    size_t n, cap;
} range_list;

static range_list handles, mappings, registered;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Index of the first item with key >= key. */
static size_t lower_bound(const range_list *l, uint64_t key)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->items[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int reserve_one(range_list *l)
{
    if (l->n < l->cap)
        return 0;
    size_t cap = l->cap ? l->cap * 2 : 256;
    range *items = mmap(NULL, cap * sizeof(range), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (items == MAP_FAILED)
        return -1;
    if (l->items) {
        memcpy(items, l->items, l->n * sizeof(range));
        munmap(l->items, l->cap * sizeof(range));
    }
    l->items = items;
    l->cap = cap;
    return 0;
}

/* Insert, replacing an item with the same key. */
static int list_put(range_list *l, range r)
{
    size_t i = lower_bound(l, r.key);
    if (i < l->n && l->items[i].key == r.key) {
        l->items[i] = r;
        return 0;
    }
    if (reserve_one(l) < 0)
        return -1;
    memmove(&l->items[i + 1], &l->items[i], (l->n - i) * sizeof(range));
    l->items[i] = r;
    l->n++;
    return 0;
}

static void list_remove(range_list *l, size_t i)
{
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof(range));
    l->n--;
}

/* 1 and *out if key is in the list. */
static int list_get(const range_list *l, uint64_t key, range *out)
{
    size_t i = lower_bound(l, key);
    if (i >= l->n || l->items[i].key != key)
        return 0;
    *out = l->items[i];
    return 1;
}

static uint16_t gpu(unsigned device)
{
    return MF_DEVICE(MF_DEVICE_GPU, device);
}

void mf_gpu_vmm_created(uint64_t handle, uint64_t size, unsigned device)
{
    pthread_mutex_lock(&lock);
    list_put(&handles, (range){ handle, size, device, 0 });
    pthread_mutex_unlock(&lock);
}

void mf_gpu_vmm_released(uint64_t handle)
{
    pthread_mutex_lock(&lock);
    size_t i = lower_bound(&handles, handle);
    if (i < handles.n && handles.items[i].key == handle)
        list_remove(&handles, i);
    pthread_mutex_unlock(&lock);
}

int mf_gpu_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle, unsigned fallback_device,
                      uint32_t scope, uint64_t time_ns)
{
    pthread_mutex_lock(&lock);
    range h;
    unsigned device = list_get(&handles, handle, &h) ? h.device : fallback_device;
    int kept = list_put(&mappings, (range){ addr, size, device, 0 }) == 0;
    pthread_mutex_unlock(&lock);
    if (!kept)
        return -1;
    mf_recorder_alloc_with_stack(gpu(device), MF_MEM_VMM << MF_MEMKIND_SHIFT, time_ns, addr,
                                 size, size, scope, MF_STRING_UNKNOWN, 0, mf_recorder_stack(0));
    return (int)device;
}

int mf_gpu_vmm_unmapped(uint64_t addr, uint64_t size, uint64_t time_ns)
{
    int device = -1;
    pthread_mutex_lock(&lock);
    size_t i = lower_bound(&mappings, addr);
    while (i < mappings.n && mappings.items[i].key - addr < size) {
        range m = mappings.items[i];
        list_remove(&mappings, i);
        mf_recorder_free_event(gpu(m.device), MF_MEM_VMM << MF_MEMKIND_SHIFT, time_ns, m.key);
        device = (int)m.device;
    }
    pthread_mutex_unlock(&lock);
    return device;
}

int mf_gpu_host_registered(uint64_t addr, uint64_t size, unsigned device, uint32_t scope,
                           uint64_t time_ns)
{
    pthread_mutex_lock(&lock);
    int kept = list_put(&registered, (range){ addr, size, device, 0 }) == 0;
    pthread_mutex_unlock(&lock);
    if (!kept)
        return -1;
    mf_recorder_alloc_with_stack(gpu(device),
                                 MF_MEM_PINNED << MF_MEMKIND_SHIFT | MF_FLAG_REGISTERED, time_ns,
                                 addr, size, size, scope, MF_STRING_UNKNOWN, 0,
                                 mf_recorder_stack(0));
    return (int)device;
}

int mf_gpu_host_unregistered(uint64_t addr, uint64_t time_ns)
{
    pthread_mutex_lock(&lock);
    range r;
    int found = list_get(&registered, addr, &r);
    if (found)
        list_remove(&registered, lower_bound(&registered, addr));
    pthread_mutex_unlock(&lock);
    if (!found)
        return -1;
    mf_recorder_free_event(gpu(r.device), MF_MEM_PINNED << MF_MEMKIND_SHIFT | MF_FLAG_REGISTERED,
                           time_ns, addr);
    return (int)r.device;
}
