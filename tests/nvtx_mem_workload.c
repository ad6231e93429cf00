/*
 * nvtx_mem_workload.c - a plain C program that describes its own arena with
 * the NVTX v3 memory API (header-only: nothing of memflow is linked).  Under
 * `memflow run` the NVTX headers hand the calls to memflow's injection
 * library, which records the regions as sub-blocks (tests/nvtx_mem_e2e.sh
 * asserts them).  The arena (1 MiB, malloc'ed in scope "pool:") is never
 * freed; inside it, all offsets from its start:
 *
 *   heap H = the whole arena (NVTX_MEM_TYPE_VIRTUAL_ADDRESS, sub-allocator)
 *   A  +0        4096 bytes   scope "layer1:"   unregistered by pointer
 *   B  +64 KiB   128 KiB      scope "layer2:"   named "weights"; ended by the reset
 *   C  +256 KiB  8192 bytes   scope "layer2:"   (one batch with B), then resized
 *                                               to 16384 in scope "grow:"; ended
 *                                               by the reset
 *   nvtxMemHeapReset(H), nvtxMemHeapUnregister(H)
 *   D  +512 KiB  1000 bytes   scope "tail:"     in the process-wide heap, never
 *                                               unregistered (live at the end)
 *
 * Sub-blocks: 5 allocations (A, B, C, C resized, D) of 159744 + 1000 bytes,
 * 4 frees, at most 151552 bytes at once (A + B + C resized), 1000 bytes (D)
 * live at the end.  It prints "arena=0x..." (its address) and, with
 * "check", verifies that a tool is attached (the heap handle is the arena).
 */
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#define ARENA_BYTES (1u << 20)

static nvtxMemHeapHandle_t register_heap(nvtxDomainHandle_t domain, void *arena)
{
    nvtxMemVirtualRangeDesc_t range = { ARENA_BYTES, arena };
    nvtxMemHeapDesc_t desc = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof desc,
        .usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
        .type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .typeSpecificDescSize = sizeof range,
        .typeSpecificDesc = &range,
        .messageType = NVTX_MESSAGE_TYPE_ASCII,
        .message.ascii = "arena",
    };
    return nvtxMemHeapRegister(domain, &desc);
}

static void register_regions(nvtxDomainHandle_t domain, nvtxMemHeapHandle_t heap,
                             const nvtxMemVirtualRangeDesc_t *ranges, size_t n)
{
    nvtxMemRegionsRegisterBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .heap = heap,
        .regionCount = n,
        .regionDescElementSize = sizeof *ranges,
        .regionDescElements = ranges,
    };
    nvtxMemRegionsRegister(domain, &batch);
}

static void resize_region(nvtxDomainHandle_t domain, void *at, size_t size)
{
    nvtxMemVirtualRangeDesc_t range = { size, at };
    nvtxMemRegionsResizeBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .regionDescCount = 1,
        .regionDescElementSize = sizeof range,
        .regionDescElements = &range,
    };
    nvtxMemRegionsResize(domain, &batch);
}

static void unregister_region(nvtxDomainHandle_t domain, void *at)
{
    nvtxMemRegionRef_t ref = { .pointer = at };
    nvtxMemRegionsUnregisterBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .refType = NVTX_MEM_REGION_REF_TYPE_POINTER,
        .refCount = 1,
        .refElementSize = sizeof ref,
        .refElements = &ref,
    };
    nvtxMemRegionsUnregister(domain, &batch);
}

static void name_region(nvtxDomainHandle_t domain, void *at, const char *name)
{
    nvtxMemRegionNameDesc_t desc = {
        .regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER,
        .nameType = NVTX_MESSAGE_TYPE_ASCII,
        .region.pointer = at,
        .name.ascii = name,
    };
    nvtxMemRegionsNameBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .regionCount = 1,
        .regionElementSize = sizeof desc,
        .regionElements = &desc,
    };
    nvtxMemRegionsName(domain, &batch);
}

int main(int argc, char **argv)
{
    int check = argc > 1;
    (void)argv;
    nvtxDomainHandle_t domain = nvtxDomainCreateA("pools");
    nvtxRangePushA("pool");
    char *arena = malloc(ARENA_BYTES);
    nvtxRangePop();
    if (!arena)
        return 2;
    printf("arena=%p\n", (void *)arena);
    fflush(stdout);

    nvtxMemHeapHandle_t heap = register_heap(domain, arena);
    if (check && heap != (nvtxMemHeapHandle_t)arena) {
        fprintf(stderr, "nvtx_mem_workload: heap handle %p, expected the arena %p\n",
                (void *)heap, (void *)arena);
        return 1;
    }

    nvtxRangePushA("layer1");
    nvtxMemVirtualRangeDesc_t a = { 4096, arena };
    register_regions(domain, heap, &a, 1);
    nvtxRangePop();

    nvtxRangePushA("layer2");
    nvtxMemVirtualRangeDesc_t bc[2] = { { 128u << 10, arena + (64u << 10) },
                                        { 8192, arena + (256u << 10) } };
    register_regions(domain, heap, bc, 2);
    nvtxRangePop();
    name_region(domain, arena + (64u << 10), "weights");

    nvtxRangePushA("grow");
    resize_region(domain, arena + (256u << 10), 16384);
    nvtxRangePop();

    unregister_region(domain, arena);
    nvtxMemHeapReset(domain, heap);
    nvtxMemHeapUnregister(domain, heap);

    nvtxRangePushA("tail");
    nvtxMemVirtualRangeDesc_t d = { 1000, arena + (512u << 10) };
    register_regions(domain, NVTX_MEM_HEAP_HANDLE_PROCESS_WIDE, &d, 1);
    nvtxRangePop();
    return 0;   /* the arena and D stay: live at the end */
}
