/*
 * torch_snapshot_gen.c - a test tool: write a large PyTorch memory snapshot
 * pickle straight to a file, as CPython's pickler writes the dict
 * torch.cuda.memory._snapshot() returns (protocol 4: FRAMEs of 64 KiB,
 * MEMOIZE, batches of 1000), without building it in memory, so a test can
 * have millions of trace entries without gigabytes of Python objects.
 *
 *   torch_snapshot_gen FILE ENTRIES [DEVICES [SEGMENTS]]
 *
 * Like PyTorch it shares frame dicts and frames lists (GETs after their
 * first time), the key and action strings and an empty compile_context,
 * and writes a fresh user_metadata string in every entry (pybind makes a
 * new str each time).  2,000 distinct frames, 5,000 distinct stacks of 8
 * to 40 frames, 64 segments (or SEGMENTS) of 8 blocks.  It prints what the file holds
 * (entries=, segments=, blocks=, frames=, stacks=, devices=, and per
 * action) for the test to compare with what the walker reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFRAMES 2000
#define NSTACKS 5000
#define NFILES 200
#define NNAMES 500
#define FRAME_TARGET (64 << 10)

static FILE *out;
static unsigned char *frame_buf;
static size_t frame_len;
static uint64_t memo_next;

/* CPython's framer: opcodes gather in a frame written once it reaches 64 KiB. */
static void flush_frame(void)
{
    if (!frame_len)
        return;
    unsigned char hdr[9] = { 0x95 };
    for (int i = 0; i < 8; i++)
        hdr[1 + i] = (unsigned char)((uint64_t)frame_len >> (8 * i));
    fwrite(hdr, 1, 9, out);
    fwrite(frame_buf, 1, frame_len, out);
    frame_len = 0;
}

static void put(const void *p, size_t n)
{
    memcpy(frame_buf + frame_len, p, n);
    frame_len += n;
}

static void op(int c)
{
    unsigned char b = (unsigned char)c;
    put(&b, 1);
}

/* At an opcode boundary: commit the frame when it is big enough. */
static void boundary(void)
{
    if (frame_len >= FRAME_TARGET)
        flush_frame();
}

static void le(uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        op((int)(v >> (8 * i)) & 0xff);
}

static uint64_t memoize(void)
{
    op(0x94);
    return memo_next++;
}

static void get(uint64_t idx)
{
    if (idx < 256) {
        op('h');
        op((int)idx);
    } else {
        op('j');
        le(idx, 4);
    }
}

static void put_int(int64_t v)
{
    if (v >= 0 && v < 256) {
        op('K');
        op((int)v);
    } else if (v >= 0 && v < 65536) {
        op('M');
        le((uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op('J');
        le((uint64_t)v, 4);
    } else {
        int n = 1;                     /* pickle.encode_long: the fewest bytes, sign included */
        while (n < 8 && !(v >= -((int64_t)1 << (8 * n - 1)) && v < ((int64_t)1 << (8 * n - 1))))
            n++;
        op(0x8a);
        op(n);
        le((uint64_t)v, n);
    }
}

/* A new str, memoized (its memo index returned). */
static uint64_t put_str(const char *s)
{
    size_t n = strlen(s);
    if (n < 256) {
        op(0x8c);
        op((int)n);
    } else {
        op('X');
        le(n, 4);
    }
    put(s, n);
    return memoize();
}

/* Strings written once and referred to after: keys, actions, texts of frames. */
typedef struct shared {
    const char *s;
    int64_t memo;          /* -1: not written yet */
} shared;

static void put_shared(shared *x)
{
    if (x->memo >= 0)
        get((uint64_t)x->memo);
    else
        x->memo = (int64_t)put_str(x->s);
}

enum { K_SEGMENTS, K_DEVICE_TRACES, K_ALLOCATOR_SETTINGS, K_DEVICE, K_ADDRESS, K_TOTAL_SIZE,
       K_ALLOCATED_SIZE, K_ACTIVE_SIZE, K_REQUESTED_SIZE, K_STREAM, K_SEGMENT_TYPE,
       K_SEGMENT_POOL_ID, K_IS_EXPANDABLE, K_BLOCKS, K_SIZE, K_STATE, K_FRAMES, K_ACTION,
       K_ADDR, K_TIME_US, K_COMPILE_CONTEXT, K_USER_METADATA, K_FILENAME, K_LINE, K_NAME,
       K_LARGE, K_ACTIVE_ALLOCATED, K_INACTIVE, K_EMPTY, K_KEYS };

static shared keys[K_KEYS] = {
    { "segments", -1 }, { "device_traces", -1 }, { "allocator_settings", -1 }, { "device", -1 },
    { "address", -1 }, { "total_size", -1 }, { "allocated_size", -1 }, { "active_size", -1 },
    { "requested_size", -1 }, { "stream", -1 }, { "segment_type", -1 },
    { "segment_pool_id", -1 }, { "is_expandable", -1 }, { "blocks", -1 }, { "size", -1 },
    { "state", -1 }, { "frames", -1 }, { "action", -1 }, { "addr", -1 }, { "time_us", -1 },
    { "compile_context", -1 }, { "user_metadata", -1 }, { "filename", -1 }, { "line", -1 },
    { "name", -1 }, { "large", -1 }, { "active_allocated", -1 }, { "inactive", -1 }, { "", -1 },
};

#define NACTIONS 4
static shared actions[NACTIONS] = {
    { "alloc", -1 }, { "free_requested", -1 }, { "free_completed", -1 }, { "segment_alloc", -1 },
};

static shared files[NFILES], names[NNAMES];
static int64_t frame_memo[NFRAMES], stack_memo[NSTACKS];
static uint64_t frames_written, stacks_written;

static void put_frame(int f)
{
    if (frame_memo[f] >= 0) {
        get((uint64_t)frame_memo[f]);
        return;
    }
    op('}');
    frame_memo[f] = (int64_t)memoize();
    op('(');
    put_shared(&keys[K_NAME]);
    put_shared(&names[(f * 7) % NNAMES]);
    put_shared(&keys[K_FILENAME]);
    put_shared(&files[f % NFILES]);
    put_shared(&keys[K_LINE]);
    put_int(f + 1);                     /* (file, line, name) unique per frame */
    op('u');
    frames_written++;
}

static int stack_len(int s)
{
    return 8 + s % 33;
}

/* Stack s: its first two frames differ from every other stack's. */
static int stack_frame(int s, int i)
{
    if (i == 0)
        return s % NFRAMES;
    if (i == 1)
        return (s / NFRAMES) % NFRAMES;
    return (s * 31 + i * 17) % NFRAMES;
}

static void put_stack(int s)
{
    if (stack_memo[s] >= 0) {
        get((uint64_t)stack_memo[s]);
        return;
    }
    op(']');
    stack_memo[s] = (int64_t)memoize();
    op('(');
    for (int i = 0; i < stack_len(s); i++) {
        put_frame(stack_frame(s, i));
        boundary();
    }
    op('e');
    stacks_written++;
}

static void key(int k)
{
    put_shared(&keys[k]);
}

static void put_segment(int i)
{
    op('}');
    memoize();
    op('(');
    key(K_DEVICE);
    put_int(i % 2);
    key(K_ADDRESS);
    put_int(0x7f0000000000ll + (int64_t)i * (32 << 20));
    key(K_TOTAL_SIZE);
    put_int(20 << 20);
    key(K_ALLOCATED_SIZE);
    put_int(8 << 20);
    key(K_ACTIVE_SIZE);
    put_int(8 << 20);
    key(K_REQUESTED_SIZE);
    put_int(8 << 20);
    key(K_STREAM);
    put_int(0);
    key(K_SEGMENT_TYPE);
    put_shared(&keys[K_LARGE]);
    key(K_SEGMENT_POOL_ID);
    put_int(0);
    put_int(0);
    op(0x86);
    memoize();
    key(K_IS_EXPANDABLE);
    op(0x89);
    key(K_FRAMES);
    put_stack(i);
    key(K_BLOCKS);
    op(']');
    memoize();
    op('(');
    for (int b = 0; b < 8; b++) {
        op('}');
        memoize();
        op('(');
        key(K_ADDRESS);
        put_int(0x7f0000000000ll + (int64_t)i * (32 << 20) + (int64_t)b * (2 << 20));
        key(K_SIZE);
        put_int(b < 4 ? 2 << 20 : 3 << 20);
        key(K_REQUESTED_SIZE);
        put_int(b < 4 ? 2000000 : 0);
        key(K_STATE);
        put_shared(&keys[b < 4 ? K_ACTIVE_ALLOCATED : K_INACTIVE]);
        key(K_FRAMES);
        put_stack(i * 8 + b);
        op('u');
        boundary();
    }
    op('e');
    op('u');
    boundary();
}

static uint64_t by_action[NACTIONS];

static void put_entry(uint64_t n)
{
    int a = n % 16 == 0 ? 3 : (int)(n % 3);    /* mostly alloc, free_requested, free_completed */
    by_action[a]++;
    op('}');
    memoize();
    op('(');
    key(K_ACTION);
    put_shared(&actions[a]);
    key(K_ADDR);
    put_int(0x7f0000000000ll + (int64_t)((n / 3) % 100000) * 4096);
    key(K_SIZE);
    put_int(512 + (int64_t)(n % 7) * 1024);
    key(K_STREAM);
    put_int(0);
    key(K_TIME_US);
    put_int(1700000000000000ll + (int64_t)n);
    key(K_COMPILE_CONTEXT);
    put_shared(&keys[K_EMPTY]);
    key(K_USER_METADATA);
    char md[48];
    snprintf(md, sizeof md, "net:layer%llu:", (unsigned long long)(n % 100));
    put_str(md);                         /* a fresh str in every entry */
    key(K_FRAMES);
    put_stack((int)((n * 2654435761u) % NSTACKS));
    op('u');
    boundary();
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: torch_snapshot_gen FILE ENTRIES [DEVICES [SEGMENTS]]\n");
        return 2;
    }
    uint64_t entries = strtoull(argv[2], NULL, 10);
    int devices = argc > 3 ? atoi(argv[3]) : 2;
    int segments = argc > 4 ? atoi(argv[4]) : 64;
    out = fopen(argv[1], "wb");
    frame_buf = malloc(FRAME_TARGET + (1 << 20));
    if (!out || !frame_buf || devices < 1 || segments < 0 || segments > NSTACKS / 8) {
        perror(argv[1]);
        return 1;
    }
    static char file_text[NFILES][64], name_text[NNAMES][64];
    for (int i = 0; i < NFILES; i++) {
        snprintf(file_text[i], 64, "/home/user/project/model_%03d.py", i);
        files[i] = (shared){ file_text[i], -1 };
    }
    for (int i = 0; i < NNAMES; i++) {
        snprintf(name_text[i], 64, "layer_function_%03d", i);
        names[i] = (shared){ name_text[i], -1 };
    }
    memset(frame_memo, 0xff, sizeof frame_memo);
    memset(stack_memo, 0xff, sizeof stack_memo);
    fwrite("\x80\x04", 1, 2, out);
    op('}');
    memoize();
    op('(');
    key(K_SEGMENTS);
    op(']');
    memoize();
    op('(');
    for (int i = 0; i < segments; i++)
        put_segment(i);
    op('e');
    key(K_DEVICE_TRACES);
    op(']');
    memoize();
    op('(');
    for (int d = 0; d < devices; d++) {
        uint64_t from = entries * (uint64_t)d / (uint64_t)devices;
        uint64_t to = entries * (uint64_t)(d + 1) / (uint64_t)devices;
        op(']');
        memoize();
        for (uint64_t n = from; n < to; n++) {
            if ((n - from) % 1000 == 0)
                op('(');
            put_entry(n);
            if ((n - from) % 1000 == 999 || n + 1 == to)
                op('e');
        }
        boundary();
    }
    op('e');
    key(K_ALLOCATOR_SETTINGS);
    op('}');
    memoize();
    op('u');
    op('.');
    flush_frame();
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("entries=%llu\nsegments=%d\nblocks=%d\nframes=%llu\nstacks=%llu\ndevices=%d\n"
           "alloc=%llu\nfree_requested=%llu\nfree_completed=%llu\nsegment_alloc=%llu\n",
           (unsigned long long)entries, segments, segments * 8, (unsigned long long)frames_written,
           (unsigned long long)stacks_written, devices, (unsigned long long)by_action[0],
           (unsigned long long)by_action[1], (unsigned long long)by_action[2],
           (unsigned long long)by_action[3]);
    return 0;
}
