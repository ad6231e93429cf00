/*
 * nvtx.c - NVTX ranges as memflow scopes: the NVTX injection library
 * libmemflow-nvtx.so.
 *
 * NVTX v3 is header-only: at a program's first NVTX call the headers load
 * the library named by NVTX_INJECTION64_PATH (`memflow run` points it here
 * unless the user set it) and call its InitializeInjectionNvtx2, which
 * fills NVTX's function tables with the functions below.  Then:
 *
 *   nvtxRangePush* / nvtxDomainRangePushEx   push the calling thread's scope
 *                                            in append mode (memflow_scope_push)
 *   nvtxRangePop / nvtxDomainRangePop        pop it
 *   nvtxRangeStart* / nvtxDomainRangeStartEx  TRACE RANGE_BEGIN (id, name,
 *   nvtxRangeEnd / nvtxDomainRangeEnd         domain) and RANGE_END: spans
 *                                            that may end on another thread
 *   nvtxMark* / nvtxDomainMarkEx             TRACE MARKER (thread)
 *   nvtxDomainCreate*, nvtxDomainRegisterString*  interned strings: their
 *                                            handles are string ids
 *   nvtxMem* (the memory extension)          regions as sub-blocks: nvtx_mem.c,
 *                                            through InitializeInjectionNvtxExtension
 *
 * Pushes and pops of every domain share the thread's one scope stack, so a
 * pop ends the innermost range pushed on the thread, whatever its domain.
 * A pop with nothing pushed through NVTX, or the end of a range that was
 * never started, is counted in a NOTE (MF_NOTE_NVTX_UNMATCHED) at exit.
 *
 * A plugin of its own, not part of the preload library: a program that
 * links only the API (or runs without `memflow run`) may set
 * NVTX_INJECTION64_PATH to it and must not get the malloc interposition of
 * the preload library by a late dlopen; and not part of the CUDA plugin,
 * because NVTX needs neither CUPTI nor a GPU (CPU-only programs and
 * PyTorch's emit_nvtx on the CPU use it).  It links libmemflow.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "memflow.h"
#include "nvtx.h"
#include "recorder.h"

/* NVTX pushes not yet popped on this thread.  This library is dlopen'ed,
 * so its TLS is allocated (malloc) at each thread's first touch: touch it
 * only inside MF_INTERNAL, or that block would count as the program's. */
static __thread int pushed;

/* Out of line, so the compiler cannot compute the address (and allocate the
 * block) before MF_INTERNAL_BEGIN. */
static __attribute__((noinline)) int *pushed_here(void)
{
    return &pushed;
}
static uint64_t next_range = 1;
static uint64_t unmatched;

/* UCS-4 (Linux wchar_t) to UTF-8, NUL-terminated, truncated to cap. */
static const char *utf8_of(const wchar_t *w, char *buf, size_t cap)
{
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        char enc[4];
        size_t len;
        if (c < 0x80) {
            enc[0] = (char)c;
            len = 1;
        } else if (c < 0x800) {
            enc[0] = (char)(0xc0 | c >> 6);
            enc[1] = (char)(0x80 | (c & 0x3f));
            len = 2;
        } else if (c < 0x10000) {
            enc[0] = (char)(0xe0 | c >> 12);
            enc[1] = (char)(0x80 | (c >> 6 & 0x3f));
            enc[2] = (char)(0x80 | (c & 0x3f));
            len = 3;
        } else {
            enc[0] = (char)(0xf0 | (c >> 18 & 0x07));
            enc[1] = (char)(0x80 | (c >> 12 & 0x3f));
            enc[2] = (char)(0x80 | (c >> 6 & 0x3f));
            enc[3] = (char)(0x80 | (c & 0x3f));
            len = 4;
        }
        if (n + len >= cap)
            break;
        memcpy(buf + n, enc, len);
        n += len;
    }
    buf[n] = 0;
    return buf;
}

const char *mf_nvtx_message(int32_t type, const nvtxMessageValue_t *value, char *buf,
                            size_t cap)
{
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return value->ascii ? value->ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        return utf8_of(value->unicode, buf, cap);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return mf_recorder_string((uint32_t)(uintptr_t)value->registered);
    }
    return "";
}

/* The message of event attributes as UTF-8 text ("" when there is none). */
static const char *message_of(const nvtxEventAttributes_t *attr, char *buf, size_t cap)
{
    return attr ? mf_nvtx_message(attr->messageType, &attr->message, buf, cap) : "";
}

static uint32_t intern(const char *text)
{
    return mf_recorder_intern(text, strlen(text));
}

uint32_t mf_nvtx_domain_id(nvtxDomainHandle_t domain)
{
    return (uint32_t)(uintptr_t)domain;
}

/* ---- push and pop: scopes ------------------------------------------------- */

/* Counted even when the scope stack is full: memflow_scope_pop() then
 * consumes the failed push, so pushes and pops stay paired. */
static int push(const char *name)
{
    int rc = memflow_scope_push(name, 1);
    MF_INTERNAL_BEGIN();
    int level = (*pushed_here())++;
    MF_INTERNAL_END();
    return rc < 0 ? -1 : level;
}

static int pop(void)
{
    MF_INTERNAL_BEGIN();
    int *n = pushed_here();
    int level = *n ? --*n : -1;
    MF_INTERNAL_END();
    if (level < 0) {
        __atomic_add_fetch(&unmatched, 1, __ATOMIC_RELAXED);
        return -1;
    }
    memflow_scope_pop();
    return level;
}

static int NVTX_API push_a(const char *message)
{
    return push(message ? message : "");
}

static int NVTX_API push_w(const wchar_t *message)
{
    char buf[NAME_MAX_BYTES];
    return push(utf8_of(message, buf, sizeof buf));
}

static int NVTX_API push_ex(const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    return push(message_of(attr, buf, sizeof buf));
}

static int NVTX_API domain_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
    (void)domain;
    return push_ex(attr);
}

static int NVTX_API pop_default(void)
{
    return pop();
}

static int NVTX_API domain_pop(nvtxDomainHandle_t domain)
{
    (void)domain;
    return pop();
}

/* ---- start and end: trace spans ------------------------------------------------ */

static nvtxRangeId_t start(uint32_t domain, const char *name)
{
    nvtxRangeId_t id = __atomic_fetch_add(&next_range, 1, __ATOMIC_RELAXED);
    mf_recorder_trace(MF_TRACE_RANGE_BEGIN, 0, id, domain, intern(name), 0);
    return id;
}

static void end(uint32_t domain, nvtxRangeId_t id)
{
    if (id == 0 || id >= __atomic_load_n(&next_range, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&unmatched, 1, __ATOMIC_RELAXED);
        return;
    }
    mf_recorder_trace(MF_TRACE_RANGE_END, 0, id, domain, 0, 0);
}

static nvtxRangeId_t NVTX_API start_a(const char *message)
{
    return start(0, message ? message : "");
}

static nvtxRangeId_t NVTX_API start_w(const wchar_t *message)
{
    char buf[NAME_MAX_BYTES];
    return start(0, utf8_of(message, buf, sizeof buf));
}

static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    return start(0, message_of(attr, buf, sizeof buf));
}

static nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t domain,
                                              const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    return start(mf_nvtx_domain_id(domain), message_of(attr, buf, sizeof buf));
}

static void NVTX_API end_default(nvtxRangeId_t id)
{
    end(0, id);
}

static void NVTX_API domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    end(mf_nvtx_domain_id(domain), id);
}

/* ---- marks, domains, registered strings ------------------------------------------ */

static void mark(uint32_t domain, const char *name)
{
    mf_recorder_trace(MF_TRACE_MARKER, 0, 0, domain, intern(name), MF_MARKER_THREAD);
}

static void NVTX_API mark_a(const char *message)
{
    mark(0, message ? message : "");
}

static void NVTX_API mark_w(const wchar_t *message)
{
    char buf[NAME_MAX_BYTES];
    mark(0, utf8_of(message, buf, sizeof buf));
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    mark(0, message_of(attr, buf, sizeof buf));
}

static void NVTX_API domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *attr)
{
    char buf[NAME_MAX_BYTES];
    mark(mf_nvtx_domain_id(domain), message_of(attr, buf, sizeof buf));
}

/* Handles are string ids (never 0: an empty name is interned too). */
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name)
{
    return (nvtxDomainHandle_t)(uintptr_t)intern(name ? name : "");
}

static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name)
{
    char buf[NAME_MAX_BYTES];
    return (nvtxDomainHandle_t)(uintptr_t)intern(utf8_of(name, buf, sizeof buf));
}

static void NVTX_API domain_destroy(nvtxDomainHandle_t domain)
{
    (void)domain;
}

static nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t domain, const char *text)
{
    (void)domain;
    return (nvtxStringHandle_t)(uintptr_t)intern(text ? text : "");
}

static nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t domain,
                                                    const wchar_t *text)
{
    char buf[NAME_MAX_BYTES];
    (void)domain;
    return (nvtxStringHandle_t)(uintptr_t)intern(utf8_of(text, buf, sizeof buf));
}

/* ---- the injection entry point -------------------------------------------------- */

typedef struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
} slot;

#define FN(f) ((NvtxFunctionPointer)(f))

static const slot core[] = {
    { NVTX_CBID_CORE_MarkEx, FN(mark_ex) },
    { NVTX_CBID_CORE_MarkA, FN(mark_a) },
    { NVTX_CBID_CORE_MarkW, FN(mark_w) },
    { NVTX_CBID_CORE_RangeStartEx, FN(start_ex) },
    { NVTX_CBID_CORE_RangeStartA, FN(start_a) },
    { NVTX_CBID_CORE_RangeStartW, FN(start_w) },
    { NVTX_CBID_CORE_RangeEnd, FN(end_default) },
    { NVTX_CBID_CORE_RangePushEx, FN(push_ex) },
    { NVTX_CBID_CORE_RangePushA, FN(push_a) },
    { NVTX_CBID_CORE_RangePushW, FN(push_w) },
    { NVTX_CBID_CORE_RangePop, FN(pop_default) },
};

static const slot core2[] = {
    { NVTX_CBID_CORE2_DomainMarkEx, FN(domain_mark_ex) },
    { NVTX_CBID_CORE2_DomainRangeStartEx, FN(domain_start_ex) },
    { NVTX_CBID_CORE2_DomainRangeEnd, FN(domain_end) },
    { NVTX_CBID_CORE2_DomainRangePushEx, FN(domain_push_ex) },
    { NVTX_CBID_CORE2_DomainRangePop, FN(domain_pop) },
    { NVTX_CBID_CORE2_DomainRegisterStringA, FN(register_string_a) },
    { NVTX_CBID_CORE2_DomainRegisterStringW, FN(register_string_w) },
    { NVTX_CBID_CORE2_DomainCreateA, FN(domain_create_a) },
    { NVTX_CBID_CORE2_DomainCreateW, FN(domain_create_w) },
    { NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy) },
};

/* Point NVTX's table of one module at our functions. */
static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const slot *slots,
                size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id < size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
    return 1;
}

/* Flush hook (memflow_dump, exit): the unmatched calls since the last note. */
static void note_unmatched(void)
{
    static uint64_t noted;
    uint64_t n = __atomic_load_n(&unmatched, __ATOMIC_RELAXED) - noted;
    noted += n;
    if (n)
        mf_recorder_note(MF_NOTE_NVTX_UNMATCHED, n);
}

/* Called by the NVTX headers in the program; returns 1 on success. */
MF_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const NvtxExportTableCallbacks *cb =
        get_export_table ? get_export_table(NVTX_ETID_CALLBACKS) : NULL;
    if (!cb || cb->struct_size < sizeof *cb)
        return 0;
    if (!fill(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0]) ||
        !fill(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]))
        return 0;
    mf_recorder_add_flush_hook(note_unmatched);
    return 1;
}
