/*
 * log_format.h - the binary layout of a memflow log (.mfl), version 2.
 *
 * The log is the single source of truth: the recorder writes it while the
 * program runs, the reader (log_in_memory.c) validates and decodes it, and every
 * output is derived from what the reader returns.  docs/FORMAT.md is the
 * prose specification of exactly this file.
 *
 * Layout: the file is a sequence of chunks of MF_CHUNK_SIZE bytes.  Chunk 0
 * holds the file header.  Every other chunk belongs to one thread and holds a
 * chunk header followed by records written back to back.  Each record starts
 * with a 64-bit word (type | size << 16 | aux << 32) that the writer stores
 * LAST, with release order, after the payload: a reader that meets a zero
 * word has reached the end of what that thread wrote - unless the chunk's
 * seal (mf_chunk_seal) or records after the zeros say they are a hole.
 * Because chunks live in
 * a shared file mapping, a record is in the page cache the moment its word is
 * stored, so SIGKILL, abort or _exit lose nothing that was recorded.
 *
 * All integers are little-endian (the writer runs on x86-64/aarch64 hosts).
 */
#ifndef MEMFLOW_LOG_FORMAT_H
#define MEMFLOW_LOG_FORMAT_H

#include <stdint.h>

#define MF_LOG_MAGIC "MEMFLOW"          /* 8 bytes with the NUL */
#define MF_LOG_VERSION 2u
#define MF_CHUNK_SIZE (1u << 20)        /* bytes per chunk */
#define MF_CHUNK_MAGIC 0x4b43464du      /* "MFCK" */
#define MF_HEADER_FINISHED 0x1u         /* file_header.flags: clean end */
#define MF_HEADER_DROPPED 0x2u          /* the log could not grow: events lost */
#define MF_HEADER_COMPACT 0x4u          /* the compact form at rest (analyze/compact/compact.h) */

/* How a process ended (file_header.end_how). */
enum mf_end_how {
    MF_END_UNKNOWN = 0,      /* not recorded: killed, crashed, or still running */
    MF_END_EXIT = 1,         /* exit() or return from main; end_status = status */
    MF_END_EXIT_NOW = 2,     /* _exit()/_Exit()/quick_exit(); end_status = status */
    MF_END_EXEC = 3,         /* the process image was replaced by exec */
    MF_END_SIGNAL = 4,       /* killed by signal end_status (seen by memflow run) */
    MF_END_OOM_KILLED = 5,   /* killed by SIGKILL from the kernel's or a cgroup's OOM killer
                                (memflow run saw the cgroup's oom_kill count grow);
                                end_status = 9 */
    MF_END_SNAPSHOT = 6      /* not an end: the log stops at a snapshot of a process that
                                went on (memflow import); end_ns = the snapshot's last event */
};

/* Chunk 0: the file header.  The argv bytes follow it in the same chunk. */
typedef struct mf_file_header {
    char magic[8];           /* MF_LOG_MAGIC */
    uint32_t version;        /* MF_LOG_VERSION */
    uint32_t header_size;    /* sizeof(mf_file_header) */
    uint32_t chunk_size;     /* MF_CHUNK_SIZE */
    uint32_t flags;          /* MF_HEADER_FINISHED when closed cleanly */
    uint64_t chunks_claimed; /* chunks handed out so far, header included */
    uint64_t pid;
    uint64_t ppid;           /* parent pid; for a forked child, the parent */
    uint64_t start_mono_ns;  /* CLOCK_MONOTONIC at log open: time origin */
    uint64_t start_real_ns;  /* CLOCK_REALTIME at the same moment */
    uint32_t clock_id;       /* clockid_t of every time_ns (CLOCK_MONOTONIC) */
    uint32_t argv_len;       /* bytes of argv that follow, NUL-separated */
    char host[64];           /* gethostname(), NUL-terminated */
    /* Version 2 */
    uint8_t run_id[16];      /* the run (memflow run, or the process tree) */
    uint32_t static_check;   /* CRC-32C of version..host (flags, chunks_claimed as 0),
                                run_id, argv bytes: mf_header_static_check() */
    uint32_t end_how;        /* enum mf_end_how */
    uint64_t end_ns;         /* when the process ended; 0 = not known */
    int64_t end_status;      /* exit status or signal number (end_how) */
    uint64_t dropped_events; /* events lost because the log could not grow */
} mf_file_header;           /* 184 bytes */

/* The header of every chunk after chunk 0. */
typedef struct mf_chunk_header {
    uint32_t magic;          /* MF_CHUNK_MAGIC; 0 = claimed but never used */
    uint32_t index;          /* this chunk's index in the file */
    uint32_t tid;            /* the thread that writes this chunk */
    uint32_t sealed;         /* 0 = not sealed; else the chunk's records reach at least
                                this offset (mf_chunk_seal) */
} mf_chunk_header;

/*
 * Seal a chunk: its records reach at least offset `used` (bytes from the
 * chunk's start, its header included).  Stored by the writer when it is done
 * with the chunk for now - the chunk is full, its thread exits, the process
 * ends, a staged copy is written - never on the hot path.  A reader that
 * meets a zero record word before the seal knows it is a hole (zeroed
 * bytes: a torn write, a bad sector), not the end of the records; a thread
 * that takes the chunk over later may write past the seal.  Stored with
 * release order after the records it covers.
 */
static inline void mf_chunk_seal(void *chunk, uint64_t used)
{
    mf_chunk_header *ch = (mf_chunk_header *)chunk;
    if (used >= sizeof *ch && used <= MF_CHUNK_SIZE)
        __atomic_store_n(&ch->sealed, (uint32_t)used, __ATOMIC_RELEASE);
}

/* Record types (the low 16 bits of the record word). */
enum mf_record_type {
    MF_REC_ALLOC = 1,        /* a block was allocated */
    MF_REC_FREE = 2,         /* a block was freed */
    MF_REC_STRING = 3,       /* an interned string: aux = id */
    MF_REC_SCOPE = 4,        /* a scope was pushed or popped on this thread */
    MF_REC_SAMPLE = 5,       /* an occupancy snapshot (sample_rate) */
    MF_REC_THREAD = 6,       /* the name of a thread: aux = string id */
    MF_REC_ACTIVITY = 7,     /* a GPU kernel, copy or set: start..end */
    MF_REC_STATE = 8,        /* profiler state change: aux = mf_state_op */
    MF_REC_NOTE = 9,         /* a counted condition, e.g. dropped records */
    MF_REC_POOL = 10,        /* a GPU memory pool created/trimmed/destroyed */
    MF_REC_TIME = 11,        /* sets the chunk's time base for compact records */
    MF_REC_CPU_ALLOC = 12,   /* compact ALLOC on cpu/0 by the chunk's thread */
    MF_REC_CPU_FREE = 13,    /* compact FREE on cpu/0 */
    MF_REC_OWNER = 14,       /* the chunk passes to another thread: aux = tid */
    MF_REC_STACK = 15,       /* a distinct call stack: aux = stack id */
    MF_REC_CPU_ALLOC_STACK = 16, /* compact ALLOC with a stack id */
    MF_REC_MODULE = 17,      /* a loaded ELF module: aux = path string id */
    MF_REC_TRACE = 18,       /* a trace object event: aux = enum mf_trace_kind */
    MF_REC_DEVICE = 19,      /* what a GPU is: aux = device */
    MF_REC_FRAME = 20,       /* a symbolic stack frame (Python, or a C/C++ frame known
                                by name): aux = frame id */
    MF_REC_STACK_NODE = 21,  /* a stack as one frame and its callers' stack (a node of
                                the tree of stacks): aux = stack id */
    /* 22..23: PyTorch's caching allocator */
    MF_REC_OOM = 22,         /* an allocation failed for want of device memory:
                                aux = device | enum mf_oom_route << 16 */
    MF_REC_SEGMENT = 23,     /* a caching allocator's segment event, from its history,
                                where another capture records the memory itself (CUPTI):
                                aux = device | enum mf_segment_op << 16 */
    MF_REC_TYPE_MAX = 23
};

/* A device is (kind << 8 | index): cpu/0 = 0x0000, gpu/3 = 0x0103. */
#define MF_DEVICE_CPU 0u
#define MF_DEVICE_GPU 1u
#define MF_DEVICE(kind, index) ((uint16_t)(((kind) << 8) | ((index) & 0xffu)))
#define MF_DEVICE_KIND(dev) ((unsigned)((dev) >> 8))
#define MF_DEVICE_INDEX(dev) ((unsigned)((dev) & 0xffu))

/* Flags of ALLOC and FREE records (the high half of aux). */
#define MF_FLAG_REUSED 0x0001u     /* MEMFLOW_ALLOC_REUSED */
#define MF_FLAG_REALLOC 0x0002u    /* one half of a realloc that moved/resized */
#define MF_FLAG_EXPLICIT 0x0004u   /* from memflow_record_alloc/free */
#define MF_FLAG_ASYNC 0x0008u      /* GPU stream-ordered (cudaMallocAsync) */
#define MF_FLAG_REGISTERED 0x0010u /* host memory registered, not allocated (cudaHostRegister) */
#define MF_FLAG_SUBBLOCK 0x0020u   /* a region inside another block (NVTX memory API,
                                      PyTorch's tensors inside their segments) */
#define MF_FLAG_BEFORE 0x0040u     /* live before recording began: its ALLOC is dated at the
                                      start of the history (PyTorch's allocator history) */
/* bits 0x0080 and 0xf000 are free */
#define MF_MEMKIND_SHIFT 8         /* bits 8..11: enum mf_memory_kind */
#define MF_MEMKIND_MASK 0x0f00u

/* What kind of memory a block is (GPU blocks; CPU heap is MF_MEM_HEAP). */
enum mf_memory_kind {
    MF_MEM_HEAP = 0,         /* CPU heap (malloc family) */
    MF_MEM_DEVICE = 1,       /* GPU device memory */
    MF_MEM_PINNED = 2,       /* page-locked host memory */
    MF_MEM_MANAGED = 3,      /* unified (managed) memory */
    MF_MEM_POOL = 4,         /* from a stream-ordered memory pool */
    MF_MEM_OTHER = 5,
    MF_MEM_VMM = 6           /* a range mapped with cuMemMap (virtual memory management) */
};

/* aux of ACTIVITY records: device | activity kind << 16. */
enum mf_activity_kind {
    MF_ACT_KERNEL = 1,
    MF_ACT_MEMCPY = 2,
    MF_ACT_MEMSET = 3
};

enum mf_scope_op { MF_SCOPE_PUSH = 1, MF_SCOPE_POP = 2 };
enum mf_state_op { MF_STATE_RUN = 1, MF_STATE_STOP = 2, MF_STATE_PAUSE = 3,
                   MF_STATE_RESUME = 4 };
/* POOL ops: GPU memory pools (CUPTI), then heaps of the NVTX memory API (a
 * range a sub-allocator hands out as sub-blocks; threshold 0). */
enum mf_pool_op { MF_POOL_CREATED = 1, MF_POOL_DESTROYED = 2, MF_POOL_TRIMMED = 3,
                  MF_POOL_HEAP_REGISTERED = 4, MF_POOL_HEAP_RESET = 5,
                  MF_POOL_HEAP_UNREGISTERED = 6 };
enum mf_note_code {
    MF_NOTE_GPU_DROPPED = 1,     /* value: CUPTI records dropped */
    MF_NOTE_GPU_OFF = 2,         /* GPU capture is off; value: CUPTI result */
    MF_NOTE_SCOPE_OVERFLOW = 3,  /* value: pushes past the scope stack limit */
    /* 4..19 GPU capture (gpu/), 20..29 stacks and NVTX, 30..39 the recorder */
    MF_NOTE_GPU_NO_DRIVER = 4,   /* the program loaded CUDA but found no driver or GPU:
                                    no GPU memory recorded */
    MF_NOTE_GPU_NOT_INJECTED = 5, /* the CUDA driver was loaded but never started the
                                    plugin: no GPU memory recorded */
    MF_NOTE_GPU_CUPTI_BUSY = 6,  /* another CUPTI client holds CUPTI: GPU capture off;
                                    value: CUPTI result */
    MF_NOTE_GPU_CUPTI_VERSION = 7, /* the loaded libcupti is not the one built with;
                                    value: loaded << 32 | built (cuptiGetVersion) */
    MF_NOTE_GPU_BAD_TIME = 8,    /* GPU records without a usable timestamp in one
                                    buffer; value: how many (none moved to time 0) */
    MF_NOTE_STACKS_FULL = 20,    /* the stack table is full; value: stack nodes stored */
    MF_NOTE_STACKS_LOST = 21,    /* value: allocations recorded without their stack */
    MF_NOTE_STACKS_OFF = 22,     /* stacks were asked for but libunwind cannot be loaded */
    MF_NOTE_NVTX_UNMATCHED = 23, /* value: NVTX pops with no push, or ends of unknown ranges */
    /* 40..49 PyTorch's caching allocator (its history, from a snapshot or live) */
    MF_NOTE_TORCH_EVENT_ORDER = 40, /* the history has no time_us: its times are the order of
                                    its events, 1 us apart; value: device */
    MF_NOTE_TORCH_SCOPES = 41,   /* where tensor scopes came from: value enum mf_torch_scopes */
    MF_NOTE_TORCH_HISTORY = 42,  /* the live history is on; value: its ring's entries */
    MF_NOTE_TORCH_HISTORY_OFF = 43, /* the live history is off, segments only: value enum
                                    mf_torch_off */
    MF_NOTE_TORCH_INCONSISTENT = 44, /* history entries that contradict the state it
                                    describes (an alloc at a live address...): value count */
    MF_NOTE_TORCH_PROFILER_NO_CUDA = 45, /* the program started torch.profiler with CUDA
                                    activities while memflow's GPU capture held CUPTI (one
                                    client per process before CUDA 13.2): it recorded no
                                    CUDA kernels; value 0 */
    /* 50..59: Python attribution */
    MF_NOTE_CPU_HEAP_OFF = 50    /* recording began in a process without CPU heap capture
                                    (not under memflow run): its malloc family is not in
                                    the log */
};

/* MF_NOTE_TORCH_SCOPES values. */
enum mf_torch_scopes {
    MF_TORCH_SCOPES_METADATA = 1, /* the allocator's user_metadata (exact) */
    MF_TORCH_SCOPES_BY_TIME = 2   /* the scope current at the entry's time on the thread that
                                    ran the modules */
};

/* MF_NOTE_TORCH_HISTORY_OFF values. */
enum mf_torch_off {
    MF_TORCH_OFF_OTHER_TOOL = 1, /* another tool already records the history */
    MF_TORCH_OFF_TOO_OLD = 2,    /* this torch has no timed history (time_us: torch >= 2.2) */
    MF_TORCH_OFF_FAILED = 3      /* turning it on, or reading it, failed */
};

/* How an OOM record's failure was seen (aux >> 16). */
enum mf_oom_route {
    MF_OOM_TORCH_TRACE = 1,      /* an `oom` entry of PyTorch's allocator history */
    MF_OOM_TORCH_OBSERVER = 2,   /* torch's out-of-memory observer */
    MF_OOM_CUDA_API = 3,         /* a CUDA allocation call that failed (CUPTI) */
    MF_OOM_KILLED = 4            /* never in a record: the analysis's post-mortem of a process
                                    an OOM killer killed (end_how MF_END_OOM_KILLED) */
};

/* What happened to a segment (SEGMENT records, aux >> 16). */
enum mf_segment_op {
    MF_SEGMENT_ALLOC = 1,        /* segment_alloc (cudaMalloc) */
    MF_SEGMENT_FREE = 2,         /* segment_free (cudaFree) */
    MF_SEGMENT_MAP = 3,          /* segment_map: pages mapped into an expandable segment */
    MF_SEGMENT_UNMAP = 4         /* segment_unmap */
};

/* aux of TRACE records: what happened to a trace object. */
enum mf_trace_kind {
    MF_TRACE_TASK_BEGIN = 1,     /* Task / nvtxRangeStart: id pairs begin and end */
    MF_TRACE_TASK_END = 2,
    MF_TRACE_FRAME_BEGIN = 3,
    MF_TRACE_FRAME_END = 4,
    MF_TRACE_EVENT_BEGIN = 5,    /* an Event span on the calling thread */
    MF_TRACE_EVENT_END = 6,
    MF_TRACE_COUNTER = 7,        /* value = the counter's new value */
    MF_TRACE_MARKER = 8,         /* an instant; arg = enum mf_marker_scope */
    MF_TRACE_RANGE_BEGIN = 9,    /* NVTX start/end range, may end on another thread */
    MF_TRACE_RANGE_END = 10,
    MF_TRACE_REGION_NAME = 11,   /* a live sub-block was named (nvtxMemRegionsName):
                                    value = its address, name, arg = its device */
    /* 12..15: Python attribution */
    MF_TRACE_BLOCK_NAME = 12,    /* the block (or sub-block) live at an address gets a name
                                    and a role (a tensor): value = the address, name, arg =
                                    device | enum mf_block_role << 16 */
    MF_TRACE_STEP = 13,          /* an optimizer step began: value = its number (from 1),
                                    name = the optimizer ("adam"), arg = MF_MARKER_PROCESS */
    /* 16..19: PyTorch's caching allocator */
    MF_TRACE_FREE_REQUESTED = 16 /* the program let go of the tensor (sub-block) live at an
                                    address; its FREE comes when the allocator takes the
                                    block back (free_completed): value = the address,
                                    arg = its device */
};

/* What a named block is (MF_TRACE_BLOCK_NAME), as PyTorch's memory timeline
 * sorts tensors. */
enum mf_block_role {
    MF_ROLE_UNKNOWN = 0,
    MF_ROLE_PARAMETER = 1,
    MF_ROLE_GRADIENT = 2,
    MF_ROLE_OPTIMIZER_STATE = 3,
    MF_ROLE_ACTIVATION = 4,      /* saved for backward */
    MF_ROLE_INPUT = 5,
    MF_ROLE_TEMPORARY = 6,
    MF_ROLE_OTHER = 7
};
enum mf_marker_scope { MF_MARKER_THREAD = 0, MF_MARKER_PROCESS = 1, MF_MARKER_GLOBAL = 2 };

/* Record payloads.  Every record is a multiple of 8 bytes. */
typedef struct mf_rec_alloc {    /* 56 bytes; aux = device | flags << 16 */
    uint64_t word;
    uint64_t time_ns;
    uint64_t addr;
    uint64_t requested;
    uint64_t actual;
    uint32_t scope;              /* string id of the scope */
    uint32_t name;               /* string id of the name; 0 = unknown */
    uint32_t tid;                /* the thread that asked for the block */
    uint32_t stack;              /* stack id (STACK record); 0 = none */
} mf_rec_alloc;

typedef struct mf_rec_free {     /* 24 bytes; aux = device | flags << 16 */
    uint64_t word;
    uint64_t time_ns;
    uint64_t addr;
} mf_rec_free;

typedef struct mf_rec_string {   /* 16 + len rounded up to 8; aux = id */
    uint64_t word;
    uint32_t len;                /* bytes that follow, no NUL */
    uint32_t reserved;
    /* char bytes[len]; */
} mf_rec_string;

typedef struct mf_rec_scope {    /* 24 bytes; aux = scope string id */
    uint64_t word;
    uint64_t time_ns;
    uint32_t op;                 /* enum mf_scope_op */
    uint32_t depth;              /* stack depth after the operation */
} mf_rec_scope;

/* Snapshot values.  CPU: jemalloc stats + process RSS.  GPU: cuMemGetInfo. */
enum mf_sample_value {
    MF_SAMPLE_ALLOCATED = 0,     /* CPU: stats.allocated */
    MF_SAMPLE_ACTIVE = 1,        /* CPU: stats.active */
    MF_SAMPLE_RESIDENT = 2,      /* CPU: stats.resident */
    MF_SAMPLE_MAPPED = 3,        /* CPU: stats.mapped */
    MF_SAMPLE_RSS = 4,           /* CPU: process resident set */
    MF_SAMPLE_GPU_USED = 0,      /* GPU: total - free */
    MF_SAMPLE_GPU_TOTAL = 1,     /* GPU: total */
    MF_SAMPLE_VALUES = 6
};

typedef struct mf_rec_sample {   /* 64 bytes; aux = device */
    uint64_t word;
    uint64_t time_ns;
    uint64_t value[MF_SAMPLE_VALUES];
} mf_rec_sample;

typedef struct mf_rec_thread {   /* 16 bytes; aux = name string id */
    uint64_t word;
    uint32_t tid;
    uint32_t reserved;
} mf_rec_thread;

typedef struct mf_rec_activity { /* 48 bytes; aux = device | kind << 16 */
    uint64_t word;
    uint64_t start_ns;
    uint64_t end_ns;
    uint64_t bytes;              /* MEMCPY/MEMSET bytes; 0 for kernels */
    uint32_t stream;
    uint32_t name;               /* string id: kernel name or copy kind */
    uint32_t correlation;
    uint32_t reserved;
} mf_rec_activity;

typedef struct mf_rec_state {    /* 16 bytes; aux = enum mf_state_op */
    uint64_t word;
    uint64_t time_ns;
} mf_rec_state;

typedef struct mf_rec_note {     /* 24 bytes; aux = enum mf_note_code */
    uint64_t word;
    uint64_t time_ns;
    uint64_t value;
} mf_rec_note;

typedef struct mf_rec_pool {     /* 40 bytes; aux = device | op << 16 */
    uint64_t word;
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size;
    uint64_t threshold;          /* release threshold; 0 if unknown */
} mf_rec_pool;

/*
 * Compact records of the CPU hot path.  Their aux is the time in ns since
 * the chunk's time base, which each TIME, CPU_ALLOC and CPU_FREE record
 * moves to its own time.  A chunk's first compact record follows a TIME
 * record; so does one whose delta would not fit in 32 bits.  The thread is
 * the chunk's, the device cpu/0, the name unknown.
 */
typedef struct mf_rec_time {     /* 16 bytes */
    uint64_t word;
    uint64_t time_ns;
} mf_rec_time;

typedef struct mf_rec_cpu_alloc { /* 32 bytes; aux = time delta */
    uint64_t word;
    uint64_t addr;
    uint64_t requested_flags;    /* requested (bits 0..47) | flags << 48 */
    uint32_t slack;              /* actual - requested */
    uint32_t scope;
} mf_rec_cpu_alloc;

typedef struct mf_rec_cpu_free {  /* 16 bytes; aux = time delta */
    uint64_t word;
    uint64_t addr_flags;         /* addr (bits 0..55) | flags << 56 */
} mf_rec_cpu_free;

/* CPU_ALLOC with the allocating call stack (memflow run --stacks). */
typedef struct mf_rec_cpu_alloc_stack { /* 40 bytes; aux = time delta */
    uint64_t word;
    uint64_t addr;
    uint64_t requested_flags;
    uint32_t slack;
    uint32_t scope;
    uint32_t stack;              /* stack id; 0 = none */
    uint32_t reserved;
} mf_rec_cpu_alloc_stack;

/*
 * A distinct call stack of this process, written once, before the first
 * record that uses its id is written (in some chunk of the same log; readers
 * collect stacks as they collect strings).  ip[0] is the innermost frame:
 * return addresses as the unwinder found them (not symbolised).
 */
#define MF_STACK_MAX_DEPTH 256
typedef struct mf_rec_stack {    /* 16 + 8 * depth bytes; aux = stack id */
    uint64_t word;
    uint32_t depth;
    uint32_t reserved;
    /* uint64_t ip[depth]; */
} mf_rec_stack;

/*
 * A STACK entry with bit 63 set is not a return address but a symbolic
 * frame: its low 32 bits are the id of a FRAME record of the same log
 * (user-space return addresses never have bit 63 set).  Stacks may mix
 * both: Python frames merged where the interpreter's eval loop runs them.
 */
#define MF_STACK_FRAME_TAG (UINT64_C(1) << 63)
static inline int mf_stack_entry_is_frame(uint64_t entry)
{
    return (entry & MF_STACK_FRAME_TAG) != 0;
}
static inline uint32_t mf_stack_entry_frame(uint64_t entry)
{
    return (uint32_t)(entry & 0xffffffffu);
}
static inline uint64_t mf_stack_frame_entry(uint32_t frame)
{
    return MF_STACK_FRAME_TAG | frame;
}

/* What a symbolic frame is (FRAME records' kind). */
enum mf_frame_kind {
    MF_FRAME_PYTHON = 1,         /* a Python function: file and line of its code */
    MF_FRAME_NATIVE = 2          /* a C/C++ function known by name (a PyTorch snapshot's
                                    C++ frames); file and line when known */
    /* other values are reserved: readers show them as MF_FRAME_NATIVE */
};

/*
 * A symbolic frame of this process, written once before the first STACK
 * record that uses its id (in some chunk of the same log), as strings are:
 * ids are dense from 1 per log.
 */
typedef struct mf_rec_frame {    /* 24 bytes; aux = frame id */
    uint64_t word;
    uint32_t function;           /* string id of the function ("train_step", a
                                    qualified name, "c10::alloc_cpu(...)") */
    uint32_t file;               /* string id of the source file; 0 = unknown */
    uint32_t line;               /* line in file; 0 = unknown */
    uint32_t kind;               /* enum mf_frame_kind */
} mf_rec_frame;

/*
 * A stack as a node of the tree of stacks: its innermost frame `entry` (a
 * return address, or a symbolic frame: mf_stack_entry_is_frame) and the
 * stack of the frames outside it, `caller` (a stack id written before, in
 * some chunk of the same log; 0: entry is the outermost frame).  Its id
 * (aux) shares the ids of STACK records; depth counts its frames (1..256,
 * the caller's + 1).  Stacks that share their outer frames share those
 * nodes, so a new stack costs one record per frame no stored stack shares.
 */
typedef struct mf_rec_stack_node {  /* 24 bytes; aux = stack id */
    uint64_t word;
    uint64_t entry;
    uint32_t caller;
    uint32_t depth;
} mf_rec_stack_node;

/*
 * An ELF module (executable or shared library) loaded in the process, so the
 * analysis can symbolise stack addresses after the process is gone: written
 * before the first STACK whose addresses fall in [start, end) (in some chunk
 * of the same log).
 */
typedef struct mf_rec_module {   /* 64 bytes; aux = path string id */
    uint64_t word;
    uint64_t bias;               /* load bias (dlpi_addr) */
    uint64_t start, end;         /* addresses its PT_LOAD segments cover */
    uint32_t build_id_len;       /* 0 when the module has no build id */
    uint32_t reserved;
    uint8_t build_id[24];        /* NT_GNU_BUILD_ID, first build_id_len bytes */
} mf_rec_module;

/* A trace object event: MXNet's Task/Frame/Event/Counter/Marker, NVTX ranges. */
typedef struct mf_rec_trace {    /* 40 bytes; aux = enum mf_trace_kind */
    uint64_t word;
    uint64_t time_ns;
    uint64_t value;              /* object id (pairs BEGIN/END), or counter value (int64) */
    uint32_t domain;             /* string id of the domain; 0 = none */
    uint32_t name;               /* string id of the object's name */
    uint32_t tid;                /* the thread */
    uint32_t arg;                /* MARKER: enum mf_marker_scope; else 0 */
} mf_rec_trace;

/* What a GPU is, for panel titles. */
typedef struct mf_rec_device {   /* 48 bytes; aux = device */
    uint64_t word;
    uint64_t total_bytes;        /* device memory */
    uint32_t name;               /* string id: the model, e.g. "NVIDIA H100 80GB HBM3" */
    uint32_t mig;                /* MIG: gpu instance << 16 | compute instance; UINT32_MAX none */
    uint8_t uuid[16];
    uint32_t pci_bus;            /* PCI domain << 16 | bus << 8 | device */
    uint32_t reserved;
} mf_rec_device;

/*
 * An allocation that failed for want of device memory (an OOM): what was
 * asked and what the device had.  What was live then is in the log already.
 */
typedef struct mf_rec_oom {      /* 48 bytes; aux = device | enum mf_oom_route << 16 */
    uint64_t word;
    uint64_t time_ns;
    uint64_t requested;          /* bytes the failed allocation asked for */
    uint64_t device_free;        /* the device's free memory then; UINT64_MAX = unknown */
    uint64_t device_limit;       /* its total (or the allocator's limit); 0 = unknown */
    uint32_t scope;              /* string id of the scope of the request */
    uint32_t stack;              /* stack id of the request; 0 = none */
} mf_rec_oom;

/* A caching allocator's segment event (PyTorch's history), written where
 * the GPU capture records the segment's memory itself. */
typedef struct mf_rec_segment {  /* 32 bytes; aux = device | enum mf_segment_op << 16 */
    uint64_t word;
    uint64_t time_ns;
    uint64_t addr;
    uint64_t size;
} mf_rec_segment;

/* A thread that exits leaves the rest of its chunk to the next new thread;
 * records after an OWNER record belong to its tid. */
typedef struct mf_rec_owner {     /* 16 bytes; aux = tid */
    uint64_t word;
    uint64_t time_ns;
} mf_rec_owner;

#define MF_CPU_SIZE_BITS 48
#define MF_CPU_ADDR_BITS 56

#define MF_RECORD_WORD(type, size, aux)                                        \
    ((uint64_t)(type) | ((uint64_t)(size) << 16) | ((uint64_t)(aux) << 32))
#define MF_WORD_TYPE(w) ((unsigned)((w) & 0xffffu))
#define MF_WORD_SIZE(w) ((unsigned)(((w) >> 16) & 0xffffu))
#define MF_WORD_AUX(w) ((uint32_t)((w) >> 32))

/* Interned string ids: 0 is "unknown" (never written), 1 is "<unk>:". */
#define MF_STRING_UNKNOWN 0u
#define MF_STRING_DEFAULT_SCOPE 1u
#define MF_STRING_MAX_LEN 4096u

/* The size every record of type has (docs/FORMAT.md), or 0 for the
 * variable-size STRING and STACK and for types this version does not know. */
static inline unsigned mf_record_fixed_size(unsigned type)
{
    switch (type) {
    case MF_REC_ALLOC: return sizeof(mf_rec_alloc);
    case MF_REC_FREE: return sizeof(mf_rec_free);
    case MF_REC_SCOPE: return sizeof(mf_rec_scope);
    case MF_REC_SAMPLE: return sizeof(mf_rec_sample);
    case MF_REC_THREAD: return sizeof(mf_rec_thread);
    case MF_REC_ACTIVITY: return sizeof(mf_rec_activity);
    case MF_REC_STATE: return sizeof(mf_rec_state);
    case MF_REC_NOTE: return sizeof(mf_rec_note);
    case MF_REC_POOL: return sizeof(mf_rec_pool);
    case MF_REC_TIME: return sizeof(mf_rec_time);
    case MF_REC_CPU_ALLOC: return sizeof(mf_rec_cpu_alloc);
    case MF_REC_CPU_FREE: return sizeof(mf_rec_cpu_free);
    case MF_REC_OWNER: return sizeof(mf_rec_owner);
    case MF_REC_CPU_ALLOC_STACK: return sizeof(mf_rec_cpu_alloc_stack);
    case MF_REC_MODULE: return sizeof(mf_rec_module);
    case MF_REC_TRACE: return sizeof(mf_rec_trace);
    case MF_REC_DEVICE: return sizeof(mf_rec_device);
    case MF_REC_FRAME: return sizeof(mf_rec_frame);
    case MF_REC_OOM: return sizeof(mf_rec_oom);
    case MF_REC_SEGMENT: return sizeof(mf_rec_segment);
    case MF_REC_STACK_NODE: return sizeof(mf_rec_stack_node);
    }
    return 0;
}

/* The sizes docs/FORMAT.md gives: a change here is a format change. */
_Static_assert(sizeof(mf_file_header) == 184, "file header");
_Static_assert(sizeof(mf_chunk_header) == 16, "chunk header");
_Static_assert(sizeof(mf_rec_alloc) == 56, "ALLOC");
_Static_assert(sizeof(mf_rec_cpu_alloc) == 32, "CPU_ALLOC");
_Static_assert(sizeof(mf_rec_cpu_alloc_stack) == 40, "CPU_ALLOC_STACK");
_Static_assert(sizeof(mf_rec_module) == 64, "MODULE");
_Static_assert(sizeof(mf_rec_trace) == 40, "TRACE");
_Static_assert(sizeof(mf_rec_device) == 48, "DEVICE");
_Static_assert(sizeof(mf_rec_frame) == 24, "FRAME");
_Static_assert(sizeof(mf_rec_oom) == 48, "OOM");
_Static_assert(sizeof(mf_rec_segment) == 32, "SEGMENT");
_Static_assert(sizeof(mf_rec_stack_node) == 24, "STACK_NODE");

#endif /* MEMFLOW_LOG_FORMAT_H */
