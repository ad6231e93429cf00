/*
 * gpu.h - GPU capture through CUPTI: the contract between the files of the
 * CUDA plugin (libmemflow-cuda.so) and its tests.
 *
 * Data flow: the CUDA driver loads the plugin (CUDA_INJECTION64_PATH) and
 * calls InitializeInjection() (inject.c), or a program calls
 * memflow_gpu_start(); capture.c then checks the loaded libcupti, subscribes
 * to CUPTI (leaving it alone if another tool holds it), enables the API
 * callbacks, the timestamp callback (mf_clock_now, so GPU and CPU share one
 * clock) and the activity buffers.
 *
 *   program thread, API exit (api.c)         CUPTI's buffer thread (translate.c)
 *   cudaMalloc -> address, scope, thread,    MEMORY2 record -> origin by address
 *     call window, snapshot -> origins.c  ---> -> ALLOC/FREE (+ SAMPLE) -> recorder
 *   cuMemMap/cuMemUnmap, cudaHostRegister    DEVICE record -> DEVICE
 *     -> vmm.c -> ALLOC/FREE now             kernels, copies, sets -> ACTIVITY
 *
 * The functions marked MF_EXPORT are the ones production hands to CUPTI;
 * tests call the very same functions with CUPTI's own record and callback
 * structs.
 */
#ifndef MEMFLOW_GPU_H
#define MEMFLOW_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

#include "log_format.h"
#include "recorder.h"

/* ---- capture.c --------------------------------------------------------- */

/*
 * Turn GPU capture on.  In this order: tell the runtime the plugin started
 * (cuda_seen.h); check the loaded libcupti's version (mf_gpu_version_policy);
 * cuptiSubscribe_v2 - if another CUPTI client holds CUPTI, stop here with one
 * line and a MF_NOTE_GPU_CUPTI_BUSY note, registering nothing of ours; the
 * API callbacks (api.c); the timestamp callback; the activity buffers;
 * MEMORY2, MEMORY_POOL, DEVICE (and, under profile_device, CONCURRENT_KERNEL,
 * MEMCPY, MEMCPY2, MEMSET); allocation sources; sampling at the source; the
 * flush hook (mf_gpu_flush) and an exit handler (mf_gpu_flush_at_exit).
 * Idempotent (only the first call does anything).
 * Returns 0 whether or not capture could be turned on: without a GPU or
 * driver CUPTI refuses, and memflow prints ONE line on stderr,
 * "memflow: GPU capture is off: <CUPTI result> (<call> failed; ...)",
 * records a MF_NOTE_GPU_OFF note when a log is open, and CPU capture goes
 * on.  memflow_gpu_active() tells which happened.
 */
MF_EXPORT int memflow_gpu_start(void);

/* 1 if memflow_gpu_start() turned GPU capture on, else 0. */
MF_EXPORT int memflow_gpu_active(void);

/*
 * What the loaded libcupti allows (API versions as cuptiGetVersion and
 * CUPTI_API_VERSION give them, xxyyzz from 13.0 on):
 *   MF_GPU_ALL          same major and minor: every kind
 *   MF_GPU_MEMORY_ONLY  same major, other minor: memory records only (kernel
 *                       and device record layouts change between minors)
 *   MF_GPU_NONE         another major (or a pre-13 numbering): capture off
 */
enum mf_gpu_policy { MF_GPU_NONE = 0, MF_GPU_MEMORY_ONLY = 1, MF_GPU_ALL = 2 };
MF_EXPORT unsigned mf_gpu_version_policy(uint32_t loaded, uint32_t built);

/*
 * The CUPTI timestamp callback: mf_clock_now(), the clock of CPU events.
 * Registered with cuptiActivityRegisterTimestampCallback, so every GPU
 * record's timestamp is already on the CPU's clock.
 */
MF_EXPORT uint64_t CUPTIAPI mf_gpu_timestamp(void);

/*
 * The activity buffer callbacks registered with cuptiActivityRegisterCallbacks.
 * requested: a fresh mmap'd buffer of MF_GPU_BUFFER_SIZE bytes (page
 * aligned, so 8-byte aligned as CUPTI requires), *max_records 0 (as many as
 * fit); on mmap failure *buffer NULL and *size 0 (CUPTI then drops and
 * counts records).  completed: mf_gpu_process_buffer(buffer, valid_size),
 * then the dropped count (cuptiActivityGetNumDroppedRecords ->
 * mf_gpu_note_dropped), then the buffer is unmapped (size bytes).
 */
#define MF_GPU_BUFFER_SIZE (4u << 20)
MF_EXPORT void CUPTIAPI mf_gpu_buffer_requested(uint8_t **buffer, size_t *size,
                                                size_t *max_records);
MF_EXPORT void CUPTIAPI mf_gpu_buffer_completed(CUcontext context, uint32_t stream_id,
                                                uint8_t *buffer, size_t size, size_t valid_size);

/*
 * Hand back CUPTI's buffers.  mf_gpu_flush is the recorder's flush hook
 * (memflow_dump, memflow_dumps, continuous dumps, memflow_dump(1)): a plain
 * cuptiActivityFlushAll(0), which returns only buffers whose records are all
 * complete, so nothing is cut.  mf_gpu_flush_at_exit, the exit handler, does
 * that and then the forced flush (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), the
 * only one that also returns buffers with unfinished records.
 */
MF_EXPORT void mf_gpu_flush(void);
MF_EXPORT void mf_gpu_flush_at_exit(void);

/*
 * Report n records that CUPTI dropped: a MF_NOTE_GPU_DROPPED note with
 * value n and one stderr line.  n == 0 does nothing.
 */
MF_EXPORT void mf_gpu_note_dropped(size_t n);

/* ---- api.c --------------------------------------------------------------- */

/*
 * What an API the plugin subscribes to does with memory:
 *   ALLOC        returns an address (cudaMalloc*, cudaHostAlloc, cuMemAlloc*...)
 *   ALLOC_ARRAY  returns an array handle (cudaMallocArray, ...3DArray, ...Mipmapped)
 *   FREE         frees an address (cudaFree*, cuMemFree*)
 *   VMM_CREATE, VMM_IMPORT, VMM_RELEASE, VMM_MAP, VMM_UNMAP: cuMemCreate,
 *                cuMemImportFromShareableHandle, cuMemRelease, cuMemMap, cuMemUnmap
 *   REGISTER, UNREGISTER: cudaHostRegister, cuMemHostRegister(_v2) and back
 * 0 for anything else.
 */
enum mf_gpu_api_role {
    MF_GPU_API_NONE = 0, MF_GPU_API_ALLOC, MF_GPU_API_ALLOC_ARRAY, MF_GPU_API_FREE,
    MF_GPU_API_VMM_CREATE, MF_GPU_API_VMM_IMPORT, MF_GPU_API_VMM_RELEASE, MF_GPU_API_VMM_MAP,
    MF_GPU_API_VMM_UNMAP, MF_GPU_API_REGISTER, MF_GPU_API_UNREGISTER
};
MF_EXPORT unsigned mf_gpu_api_role(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/*
 * The CUPTI API callback (cuptiSubscribe).  Per thread it tracks nesting (a
 * runtime call reaching a traced driver call is one call); at the outermost
 * ENTER it notes the time and the thread's scope, at the outermost EXIT of a
 * call that succeeded it acts on the role:
 *   ALLOC: the returned address -> origins (MF_GPU_KEY_ALLOC) with scope,
 *     thread, call window and, when sample_rate says one is due, a snapshot;
 *   ALLOC_ARRAY: the same keyed by the call's correlationId;
 *   FREE: a due snapshot -> origins (MF_GPU_KEY_FREE) by the address;
 *   VMM_* and (UN)REGISTER: vmm.c records the block now.
 * The correlation ids of VMM and (un)register calls, nested ones included,
 * are remembered (mf_gpu_api_recorded) so a MEMORY2 record of them is not
 * counted twice.
 */
MF_EXPORT void CUPTIAPI mf_gpu_api_callback(void *userdata, CUpti_CallbackDomain domain,
                                            CUpti_CallbackId cbid, const void *cbdata);

/* Enable the callbacks of every API with a role; the first failure, or
 * CUPTI_SUCCESS (the others are still tried). */
CUptiResult mf_gpu_api_enable(CUpti_SubscriberHandle subscriber);

/* 1 if correlation_id belongs to a call whose memory vmm.c records itself. */
int mf_gpu_api_recorded(uint32_t correlation_id);

/* ---- origins.c ----------------------------------------------------------- */

/* What the API callback knew about the call that asked for (or freed) memory. */
typedef struct mf_gpu_origin {
    uint32_t scope;          /* scope string id */
    uint32_t tid;            /* kernel thread id */
    uint32_t stack;          /* stack id of the API call; 0 until stacks are wired */
    uint16_t device;         /* MF_DEVICE of the calling context (the snapshot's) */
    uint16_t has_sample;     /* sample[] holds a snapshot taken at the API's exit */
    uint64_t enter_ns, exit_ns; /* the call's window on mf_clock_now */
    uint64_t sample[2];      /* MF_SAMPLE_GPU_USED, MF_SAMPLE_GPU_TOTAL */
} mf_gpu_origin;

enum mf_gpu_key_kind { MF_GPU_KEY_ALLOC = 1, MF_GPU_KEY_FREE = 2, MF_GPU_KEY_CORRELATION = 3 };

/* Keep origin under (kind, key) until taken; never evicts.  0, or -1 when
 * memory is out (the block is then untagged). */
int mf_gpu_origin_put(unsigned kind, uint64_t key, const mf_gpu_origin *origin);

/* Take the origin under (kind, key): the one whose call window holds
 * time_ns, else the oldest.  1 and *origin filled, or 0. */
int mf_gpu_origin_take(unsigned kind, uint64_t key, uint64_t time_ns, mf_gpu_origin *origin);

/* How many origins wait for their record. */
size_t mf_gpu_origins_pending(void);

/* ---- vmm.c --------------------------------------------------------------- */

/*
 * Virtual memory management and registered host memory, recorded from the
 * API callbacks on the calling thread (CUPTI's MEMORY2 records have no
 * mapped address for them).  A physical allocation (cuMemCreate) is
 * remembered by handle with its size and device; each cuMemMap becomes an
 * ALLOC of memory kind MF_MEM_VMM at the mapped address on the handle's
 * device (fallback_device if the handle is unknown, e.g. imported); a
 * cuMemUnmap frees every mapping that starts inside the range.  A host
 * range registered with cudaHostRegister is an ALLOC of kind MF_MEM_PINNED
 * with MF_FLAG_REGISTERED until unregistered.  Events carry scope, the
 * calling thread and time_ns.  The mapping and unmapping functions return
 * the device index the event was on, or -1 when nothing was recorded.
 */
void mf_gpu_vmm_created(uint64_t handle, uint64_t size, unsigned device);
void mf_gpu_vmm_released(uint64_t handle);
int mf_gpu_vmm_mapped(uint64_t addr, uint64_t size, uint64_t handle, unsigned fallback_device,
                      uint32_t scope, uint64_t time_ns);
int mf_gpu_vmm_unmapped(uint64_t addr, uint64_t size, uint64_t time_ns);
int mf_gpu_host_registered(uint64_t addr, uint64_t size, unsigned device, uint32_t scope,
                           uint64_t time_ns);
int mf_gpu_host_unregistered(uint64_t addr, uint64_t time_ns);

/* ---- translate.c ------------------------------------------------------- */

/*
 * Translate every activity record in buffer[0 .. valid_size) into recorder
 * events; the production buffer-completed callback calls it, and so do the
 * tests.  Records are walked with cuptiActivityGetNextRecord.
 *   MEMORY2 ALLOCATION -> ALLOC on gpu/<deviceId>, scope/thread from the
 *     origin under its address (or correlation id); untagged: "<unk>:" and
 *     the translating thread.  Name: the variable's name (statics), or for
 *     an untagged block the library that asked (allocation source).  A
 *     snapshot taken at the API exit follows as a SAMPLE with the same time.
 *   MEMORY2 RELEASE -> FREE (and its snapshot, if one was taken).
 *   MEMORY2 of a call vmm.c recorded itself (mf_gpu_api_recorded): skipped.
 *   MEMORY_POOL -> POOL; DEVICE -> DEVICE, once per device.
 *   CONCURRENT_KERNEL, KERNEL, MEMCPY, MEMCPY2, MEMSET -> ACTIVITY.
 *   EXTERNAL_CORRELATION and other kinds: skipped.
 * Timestamps: a memory or pool record stamped 0 takes its call's exit time
 * (or the latest good GPU timestamp); a kernel, copy or set with start 0 or
 * end < start is skipped; either way nothing lands at time 0, and the count
 * becomes one MF_NOTE_GPU_BAD_TIME note per buffer.
 * Nothing is recorded unless a log is open.  Returns the number of records
 * walked (0 when no log is open or buffer is NULL); a record CUPTI cannot
 * walk stops the walk with one stderr line naming the CUPTI result and the
 * byte offset of the last good record.
 */
MF_EXPORT size_t mf_gpu_process_buffer(uint8_t *buffer, size_t valid_size);

/*
 * The memflow memory kind of a MEMORY2 record: MF_MEM_POOL when it came
 * from a stream-ordered pool (memoryPoolType LOCAL or IMPORTED), else by
 * memoryKind: DEVICE, DEVICE_STATIC, ARRAY -> MF_MEM_DEVICE; PINNED ->
 * MF_MEM_PINNED; MANAGED, MANAGED_STATIC -> MF_MEM_MANAGED; others ->
 * MF_MEM_OTHER.
 */
MF_EXPORT unsigned mf_gpu_memory_kind(unsigned cupti_memory_kind, unsigned pool_type);

/* "HtoD", "DtoH", ... for a CUpti_ActivityMemcpyKind; "memcpy" if unknown. */
MF_EXPORT const char *mf_gpu_memcpy_kind_name(unsigned copy_kind);

/* ---- names.c ----------------------------------------------------------- */

/*
 * The interned id of a kernel's name, demangled when it is a mangled C++
 * symbol ("_Z13dense_forwardPKfS0_S0_Pfii" -> "dense_forward(float const*,
 * ...)") and the C++ runtime's __cxa_demangle can be found; otherwise the
 * name as it is.  NULL -> MF_STRING_UNKNOWN.  Cached by the string's
 * address (CUPTI shares one string among a kernel's records).
 */
MF_EXPORT uint32_t mf_gpu_kernel_name(const char *name);

/*
 * The name of a block from its MEMORY2 record: the variable's name when
 * CUPTI gives one (module globals); else, for an untagged block, the file
 * name of the library that asked for it ("/usr/lib/libcublasLt.so.13" ->
 * "libcublasLt.so.13"); else MF_STRING_UNKNOWN.
 */
MF_EXPORT uint32_t mf_gpu_memory_name(const char *variable, const char *source, int tagged);

/* ---- sampler.c --------------------------------------------------------- */

/*
 * sample_rate on GPUs, at the source: called at an API's exit on the calling
 * thread.  Counts one event on gpu/<device> (mf_recorder_sample_due); when
 * a snapshot is due, fills value[0] = used (total - free) and value[1] =
 * total from cuMemGetInfo in the thread's current context - the one the API
 * just used - and returns 1.  Without a driver in the process the values
 * stay 0.  Else 0.
 */
int mf_gpu_sample_if_due(unsigned device, uint64_t value[2]);

/*
 * Where the snapshot's numbers come from: NULL (default) is the driver's
 * cuMemGetInfo; tests may set a function (this machine has no driver).
 * It returns 0 and fills used and total, or -1.
 */
typedef int (*mf_gpu_memory_query)(uint64_t *used, uint64_t *total);
MF_EXPORT void mf_gpu_sampler_set_query(mf_gpu_memory_query query);

/* The device's memory now, from the same source (cuMemGetInfo in the
 * calling thread's context, or the tests' query): 0, or -1 when unknown. */
int mf_gpu_memory_now(uint64_t *used, uint64_t *total);

/* PCI domain << 16 | bus << 8 | device of a CUDA device ordinal, from the
 * driver when it is in the process; 0 otherwise. */
uint32_t mf_gpu_pci_bus(unsigned device);

#endif /* MEMFLOW_GPU_H */
