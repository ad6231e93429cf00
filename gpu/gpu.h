/*
 * gpu.h - GPU capture through CUPTI: the contract between the files of the
 * CUDA plugin (libmemflow-cuda.so) and its tests.
 *
 * Data flow: the CUDA driver loads the plugin (CUDA_INJECTION64_PATH) and
 * calls InitializeInjection() (inject.c), or a program calls
 * memflow_gpu_start(); capture.c then registers CUPTI's activity buffers,
 * the timestamp callback (mf_clock_now, so GPU and CPU share one clock) and
 * the runtime/driver API callbacks of the allocation functions.  On API
 * entry, correlation.c remembers correlationId -> (scope, thread) of the
 * calling thread.  CUPTI hands back filled buffers on its own thread;
 * translate.c walks them and hands each record to the recorder (runtime/),
 * looking the scope up by correlationId.  sampler.c answers sample_rate
 * with cuMemGetInfo.
 *
 * The functions marked MF_EXPORT are the ones production hands to CUPTI;
 * tests call the very same functions with synthetic CUPTI records.
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
 * Turn GPU capture on: timestamp callback, activity buffers, MEMORY2 and
 * MEMORY_POOL (and, under profile_device, CONCURRENT_KERNEL, MEMCPY,
 * MEMCPY2, MEMSET), allocation API callbacks, the flush hook and the GPU
 * sampler.  Idempotent (only the first call does anything).
 * Returns 0 whether or not capture could be turned on: without a GPU or
 * driver CUPTI refuses, and memflow prints ONE line on stderr,
 * "memflow: GPU capture is off: <CUPTI result> (...)", records a
 * MF_NOTE_GPU_OFF note when a log is open, and CPU capture goes on.
 * memflow_gpu_active() tells which happened.
 */
MF_EXPORT int memflow_gpu_start(void);

/* 1 if memflow_gpu_start() turned GPU capture on, else 0. */
MF_EXPORT int memflow_gpu_active(void);

/*
 * The CUPTI timestamp callback: mf_clock_now(), the clock of CPU events.
 * Registered with cuptiActivityRegisterTimestampCallback, so every GPU
 * record's timestamp is already on the CPU's clock: translate.c copies
 * timestamps unchanged.
 */
MF_EXPORT uint64_t CUPTIAPI mf_gpu_timestamp(void);

/*
 * The CUPTI API callback (cuptiSubscribe).  On CUPTI_API_ENTER of an
 * allocation function (mf_gpu_is_alloc_api) it remembers the callback's
 * correlationId with the calling thread's current scope and thread id, and
 * the context handle under its contextUid.  Everything else is ignored.
 */
MF_EXPORT void CUPTIAPI mf_gpu_api_callback(void *userdata, CUpti_CallbackDomain domain,
                                            CUpti_CallbackId cbid, const void *cbdata);

/*
 * 1 if (domain, cbid) is a runtime or driver function that allocates GPU,
 * pinned, managed or pool memory (cudaMalloc*, cudaHostAlloc, cuMemAlloc*,
 * cuMemHostAlloc, cuMemAllocManaged, cuMemAllocAsync, ...), else 0.
 */
MF_EXPORT int mf_gpu_is_alloc_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

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
 * Report n records that CUPTI dropped: a MF_NOTE_GPU_DROPPED note with
 * value n and one stderr line.  n == 0 does nothing.  The buffer-completed
 * callback calls it with cuptiActivityGetNumDroppedRecords' count.
 */
MF_EXPORT void mf_gpu_note_dropped(size_t n);

/* ---- translate.c ------------------------------------------------------- */

/*
 * Translate every activity record in buffer[0 .. valid_size) into recorder
 * events; the production buffer-completed callback calls it, and so do the
 * tests.  Records are walked with cuptiActivityGetNextRecord, which works on
 * any 8-byte aligned buffer laid out the way CUPTI lays it out (records back
 * to back, each rounded up to 8 bytes) - no driver needed.
 *   MEMORY2 ALLOCATION -> mf_recorder_alloc_event on gpu/<deviceId>
 *   MEMORY2 RELEASE    -> mf_recorder_free_event
 *   MEMORY_POOL        -> mf_recorder_pool
 *   CONCURRENT_KERNEL, KERNEL, MEMCPY, MEMCPY2, MEMSET -> mf_recorder_activity
 *   EXTERNAL_CORRELATION and other kinds: skipped.
 * Nothing is recorded unless a log is open (mf_recorder_log_open()).
 * Returns the number of records walked (0 when no log is open or buffer is
 * NULL); a record CUPTI cannot walk (unknown kind, cut short) stops the walk
 * with one stderr line naming the CUPTI result and the byte offset of the
 * last good record, and the rest of that buffer is skipped.
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

/* ---- correlation.c ----------------------------------------------------- */

/* What the API callback knew about the thread that asked for memory. */
typedef struct mf_gpu_origin {
    uint32_t scope;   /* scope string id */
    uint32_t tid;     /* kernel thread id */
} mf_gpu_origin;

/*
 * Remember correlation_id -> origin.  Lock-free: a direct-mapped table of
 * MF_GPU_CORRELATION_SLOTS slots indexed by the id; a later id that maps to
 * the same slot replaces an older one (its record is then untagged).
 * correlation_id 0 is ignored.
 */
#define MF_GPU_CORRELATION_SLOTS 65536u
void mf_gpu_correlation_put(uint32_t correlation_id, mf_gpu_origin origin);

/*
 * Look correlation_id up: 1 and *origin filled if it is remembered, else 0.
 * Safe against concurrent puts (a torn read is detected and reported as 0).
 */
int mf_gpu_correlation_get(uint32_t correlation_id, mf_gpu_origin *origin);

/*
 * Remember the context handle of a contextUid (== activity contextId), for
 * cuMemGetInfo on CUPTI's thread; mf_gpu_context_get returns NULL if it is
 * unknown.  At most 256 contexts are remembered.
 */
void mf_gpu_context_put(uint32_t context_id, void *context);
void *mf_gpu_context_get(uint32_t context_id);

/* ---- sampler.c --------------------------------------------------------- */

/*
 * The GPU sampler for sample_rate (mf_recorder_set_sampler): with the
 * context of the record being translated made current, cuMemGetInfo fills
 * value[MF_SAMPLE_GPU_USED] = total - free and value[MF_SAMPLE_GPU_TOTAL];
 * the caller's current context is restored afterwards.  Without a loaded
 * driver (libcuda.so.1 not in the process) or a known context it leaves
 * the values 0.
 */
MF_EXPORT void mf_gpu_sample(uint16_t device, uint64_t value[MF_SAMPLE_VALUES]);

/*
 * Which context the sampler should use: translate.c sets the context of
 * the record it is translating (NULL clears).  Per thread.
 */
void mf_gpu_sampler_set_context(void *context);

#endif /* MEMFLOW_GPU_H */
