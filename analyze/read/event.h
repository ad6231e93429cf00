/*
 * event.h - one decoded record of a log, as the reader hands it to the
 * model: the same struct for every record type, which fields mean what
 * depending on type.  String ids are ids of the analysis's string pool
 * (string_pool.h), stack ids the reader's (mf_reader_stack), so events
 * of several logs mean the same thing by the same number.
 */
#ifndef MEMFLOW_EVENT_H
#define MEMFLOW_EVENT_H

#include <stdint.h>

#include "log_format.h"

/* Pseudo types the reader adds to the record types (log_format.h). */
#define MF_EV_PROCESS_END 0x100u  /* the process of log `log` ended at time_ns
                                     (extra: enum mf_end_how, or MF_EV_END_INFERRED
                                     | how when the reader inferred it) */
#define MF_EV_END_INFERRED 0x100u

typedef struct mf_event {
    uint64_t time_ns;   /* CLOCK_MONOTONIC ns; ACTIVITY: start; THREAD/DEVICE: 0 */
    uint64_t addr;      /* ALLOC/FREE/POOL: address; ACTIVITY: correlation;
                           TRACE: object id or counter value; DEVICE: uuid[0..8) */
    uint64_t size;      /* ALLOC: requested; ACTIVITY: bytes; POOL: size;
                           NOTE: value; DEVICE: total bytes */
    uint64_t actual;    /* ALLOC: actual size; ACTIVITY: end ns; POOL: threshold;
                           DEVICE: uuid[8..16) */
    uint32_t tid;       /* the thread (ALLOC: the one that asked) */
    uint32_t scope;     /* ALLOC, SCOPE: scope; THREAD: name; TRACE: domain;
                           DEVICE: pci bus */
    uint32_t name;      /* ALLOC, ACTIVITY, TRACE, DEVICE: name */
    uint32_t extra;     /* SCOPE: op | depth << 8; ACTIVITY: stream; SAMPLE: index
                           into the batch's sample values; STATE: op; NOTE: code;
                           POOL: op; TRACE: arg; DEVICE: mig; PROCESS_END: how */
    uint32_t stack;     /* ALLOC: stack id (0: none) */
    uint16_t type;      /* enum mf_record_type, or MF_EV_* */
    uint16_t device;    /* MF_DEVICE(kind, index) */
    uint16_t flags;     /* ALLOC/FREE: MF_FLAG_* | memory kind; ACTIVITY: kind;
                           TRACE: enum mf_trace_kind */
    uint16_t log;       /* which log (process image) it came from */
} mf_event;

/* The values of a SAMPLE record. */
/* A call stack (STACK record): ip[0] innermost; every ip a return address. */
typedef struct mf_stack {
    uint32_t depth;            /* 0 where the log has no stack of that id */
    uint64_t *ip;
} mf_stack;

/* An ELF module of the process (MODULE record), for symbolisation. */
typedef struct mf_module {
    uint32_t path;             /* string id of its path (pool id) */
    uint32_t build_id_len;     /* 0: none recorded */
    uint64_t bias;             /* load bias: file address = ip - bias */
    uint64_t start, end;       /* addresses its PT_LOAD segments cover */
    uint8_t build_id[24];
} mf_module;

typedef struct mf_sample_values {
    uint64_t value[MF_SAMPLE_VALUES];
} mf_sample_values;

#endif /* MEMFLOW_EVENT_H */
