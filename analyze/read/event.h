/*
 * event.h - one decoded record of a log, as the reader hands it to the
 * model: a head every event has (time, type, thread, log, device) and a
 * payload of the record's kind, named after it (e->alloc.requested,
 * e->gpu.uuid).  Read only the payload of e->type.  The compact CPU records
 * decode to ALLOC and FREE like the full ones.  String ids are ids of the
 * analysis's string pool (string_pool.h), stack ids the reader's
 * (mf_reader_stack), so events of several logs mean the same thing by the
 * same number.
 */
#ifndef MEMFLOW_EVENT_H
#define MEMFLOW_EVENT_H

#include <stdint.h>

#include "log_format.h"

/* Pseudo types the reader adds to the record types (log_format.h). */
#define MF_EV_PROCESS_END 0x100u  /* the process of log `log` ended at time_ns */
#define MF_EV_END_INFERRED 0x100u /* mf_ev_end.how: the reader inferred the end */

/* ALLOC: a block was allocated. */
typedef struct mf_ev_alloc {
    uint64_t addr;
    uint64_t requested;       /* bytes asked for */
    uint64_t actual;          /* bytes the allocator set aside (0: not known) */
    uint32_t scope;           /* string id of the scope it was asked for in */
    uint32_t name;            /* string id of its name (0: unknown) */
    uint32_t stack;           /* stack id of the code that asked (0: none) */
    uint16_t flags;           /* MF_FLAG_* | memory kind */
} mf_ev_alloc;

/* FREE: the block at addr was freed. */
typedef struct mf_ev_free {
    uint64_t addr;
    uint16_t flags;           /* MF_FLAG_* | memory kind, as its ALLOC's */
} mf_ev_free;

/* SCOPE: a scope was pushed or popped on the thread. */
typedef struct mf_ev_scope {
    uint32_t scope;           /* string id of the scope */
    uint32_t op;              /* enum mf_scope_op (8 bits) */
    uint32_t depth;           /* the thread's scope depth after it (24 bits) */
} mf_ev_scope;

/* SAMPLE: an occupancy snapshot of the device. */
typedef struct mf_ev_sample {
    uint32_t index;           /* its values: index into the sample values handed
                                 out with the event (mf_reader_next's samples,
                                 mf_log's samples) */
} mf_ev_sample;

/* ACTIVITY: a GPU kernel, copy or set, from time_ns to end_ns. */
typedef struct mf_ev_activity {
    uint64_t end_ns;
    uint64_t bytes;           /* copies and sets; 0 for kernels */
    uint32_t correlation;     /* CUPTI's correlation id */
    uint32_t name;            /* string id: the kernel's name or the copy's kind */
    uint32_t stream;
    uint16_t kind;            /* enum mf_activity_kind */
} mf_ev_activity;

/* STATE: the profiler's state changed. */
typedef struct mf_ev_state {
    uint32_t op;              /* enum mf_state_op */
} mf_ev_state;

/* NOTE: a counted condition. */
typedef struct mf_ev_note {
    uint64_t value;
    uint32_t code;            /* enum mf_note_code */
} mf_ev_note;

/* POOL: a GPU memory pool or an NVTX heap changed. */
typedef struct mf_ev_pool {
    uint64_t addr, size;
    uint64_t threshold;       /* release threshold; 0 if unknown */
    uint32_t op;              /* enum mf_pool_op */
} mf_ev_pool;

/* TRACE: a trace object's event (MXNet's Task, Frame, Event, Counter,
 * Marker; NVTX ranges and region names). */
typedef struct mf_ev_trace {
    uint64_t value;           /* object id (pairs begin and end); COUNTER: its value
                                 (an int64); REGION_NAME: the region's address */
    uint32_t domain;          /* string id of the domain (0: none) */
    uint32_t name;            /* string id of the object's name */
    uint32_t arg;             /* MARKER: enum mf_marker_scope; REGION_NAME: the
                                 device the region was recorded on; else 0 */
    uint16_t kind;            /* enum mf_trace_kind */
} mf_ev_trace;

/* THREAD: the name of thread tid (no time). */
typedef struct mf_ev_thread {
    uint32_t name;            /* string id */
} mf_ev_thread;

/* DEVICE: what the GPU `device` is (no time). */
typedef struct mf_ev_gpu {
    uint64_t total_bytes;     /* its memory */
    uint32_t name;            /* string id of the model */
    uint32_t mig;             /* gpu instance << 16 | compute instance; UINT32_MAX none */
    uint32_t pci_bus;         /* PCI domain << 16 | bus << 8 | device */
    uint8_t uuid[16];
} mf_ev_gpu;

/* OOM: an allocation failed for want of device memory (on e->device). */
typedef struct mf_ev_oom {
    uint64_t requested;       /* bytes asked for */
    uint64_t device_free;     /* the device's free memory then; UINT64_MAX unknown */
    uint64_t device_limit;    /* its total or the allocator's limit; 0 unknown */
    uint32_t scope;           /* string id of the request's scope */
    uint32_t stack;           /* stack id of the request (0: none) */
    uint16_t route;           /* enum mf_oom_route */
} mf_ev_oom;

/* SEGMENT: a caching allocator's segment event (on e->device). */
typedef struct mf_ev_segment {
    uint64_t addr, size;
    uint16_t op;              /* enum mf_segment_op */
} mf_ev_segment;

/* MF_EV_PROCESS_END: the process image of log ended at time_ns. */
typedef struct mf_ev_end {
    uint32_t how;             /* enum mf_end_how, | MF_EV_END_INFERRED when the
                                 reader inferred it (no end mark) */
} mf_ev_end;

typedef struct mf_event {
    uint64_t time_ns;         /* CLOCK_MONOTONIC ns (ACTIVITY: its start); THREAD,
                                 DEVICE: 0 */
    uint32_t tid;             /* the thread that recorded it (ALLOC: the one that
                                 asked; THREAD: the one named) */
    uint16_t type;            /* enum mf_record_type, or MF_EV_* */
    uint16_t log;             /* which log (process image) it came from */
    uint16_t device;          /* MF_DEVICE(kind, index) of ALLOC, FREE, SAMPLE,
                                 ACTIVITY, POOL, DEVICE, OOM, SEGMENT; else 0 */
    union {                   /* by type: */
        mf_ev_alloc alloc;        /* ALLOC */
        mf_ev_free free;          /* FREE */
        mf_ev_scope scope;        /* SCOPE */
        mf_ev_sample sample;      /* SAMPLE */
        mf_ev_activity activity;  /* ACTIVITY */
        mf_ev_state state;        /* STATE */
        mf_ev_note note;          /* NOTE */
        mf_ev_pool pool;          /* POOL */
        mf_ev_trace trace;        /* TRACE */
        mf_ev_thread thread;      /* THREAD */
        mf_ev_gpu gpu;            /* DEVICE */
        mf_ev_end end;            /* MF_EV_PROCESS_END */
        mf_ev_oom oom;            /* OOM */
        mf_ev_segment segment;    /* SEGMENT */
    };
} mf_event;

_Static_assert(sizeof(mf_event) == 64, "an event is one cache line");

/*
 * The string ids e carries, as pointers into it (ids[0..n), n returned,
 * at most 2, in the record's field order): for code that maps them from
 * one pool to another.
 */
static inline unsigned mf_event_strings(mf_event *e, uint32_t *ids[2])
{
    switch (e->type) {
    case MF_REC_ALLOC: ids[0] = &e->alloc.scope; ids[1] = &e->alloc.name; return 2;
    case MF_REC_TRACE: ids[0] = &e->trace.domain; ids[1] = &e->trace.name; return 2;
    case MF_REC_SCOPE: ids[0] = &e->scope.scope; return 1;
    case MF_REC_ACTIVITY: ids[0] = &e->activity.name; return 1;
    case MF_REC_THREAD: ids[0] = &e->thread.name; return 1;
    case MF_REC_DEVICE: ids[0] = &e->gpu.name; return 1;
    case MF_REC_OOM: ids[0] = &e->oom.scope; return 1;
    }
    return 0;
}

/* The same ids, to read. */
static inline unsigned mf_event_strings_of(const mf_event *e, const uint32_t *ids[2])
{
    uint32_t *p[2];
    unsigned n = mf_event_strings((mf_event *)e, p);   /* only read through */
    for (unsigned i = 0; i < n; i++)
        ids[i] = p[i];
    return n;
}

/* A call stack (STACK record): ip[0] innermost; every ip a return address. */
typedef struct mf_stack {
    uint32_t depth;            /* 0 where the log has no stack of that id */
    uint64_t *ip;
} mf_stack;

/* A symbolic frame (FRAME record): a Python function at a line, or a C/C++
 * frame known by name.  A stack entry with MF_STACK_FRAME_TAG names one. */
typedef struct mf_symbolic_frame {
    uint32_t function;         /* string id (pool id) */
    uint32_t file;             /* string id (pool id); 0: unknown */
    uint32_t line;             /* 0: unknown */
    uint32_t kind;             /* enum mf_frame_kind */
} mf_symbolic_frame;

/* An ELF module of the process (MODULE record), for symbolisation. */
typedef struct mf_module {
    const char *path;          /* its path (the reader's or mf_log's text) */
    uint32_t build_id_len;     /* 0: none recorded */
    uint64_t bias;             /* load bias: file address = ip - bias */
    uint64_t start, end;       /* addresses its PT_LOAD segments cover */
    uint8_t build_id[24];
} mf_module;

/* The values of a SAMPLE record. */
typedef struct mf_sample_values {
    uint64_t value[MF_SAMPLE_VALUES];
} mf_sample_values;

#endif /* MEMFLOW_EVENT_H */
