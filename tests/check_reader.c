/*
 * check_reader.c - Check suite of the streaming reader (analyze/read/reader.c,
 * log_scan.c, merge.c, log_header.c) on real logs: each test records with
 * the real recorder in its own forked process, closes the log, damages it
 * the way a disk, a crash or a stray write would, and reads it back.
 * Expected values are exact: event order, damage messages with offsets,
 * repaired header fields, process relations, stack ids.
 */
#include <check.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checksum.h"
#include "chrome_trace.h"
#include "clock.h"
#include "config.h"
#include "log_in_memory.h"
#include "memflow.h"
#include "model.h"
#include "reader.h"
#include "recorder.h"
#include "sink.h"
#include "stats.h"

#define CPU0 MF_DEVICE(MF_DEVICE_CPU, 0)
#define P(x) ((const void *)(uintptr_t)(x))

static char scratch[1024];

static void start_recording(const char *test)
{
    const char *top = getenv("top_builddir");
    char cmd[4096];
    snprintf(scratch, sizeof scratch, "%s/tests/out/check_reader/%s", top ? top : ".", test);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", scratch, scratch);
    ck_assert_int_eq(system(cmd), 0);
    const char *k = "path", *v = scratch;
    ck_assert_int_eq(memflow_set_config(1, &k, &v), 0);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
}

/* Finish the log and return its path (static storage). */
static const char *finish(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_recorder_finish();
    return path;
}

static void read_header(const char *path, mf_file_header *h)
{
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, h, sizeof *h, 0), sizeof *h);
    close(fd);
}

static void write_at(const char *path, const void *bytes, size_t len, long offset)
{
    int fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, bytes, len, offset), (ssize_t)len);
    close(fd);
}

/* Give the log a static_check as the format defines it (version..host,
 * run_id, argv bytes), and optionally a run id first. */
static void seal_header(const char *path, const uint8_t *run_id)
{
    mf_file_header h;
    read_header(path, &h);
    if (run_id)
        memcpy(h.run_id, run_id, 16);
    char argv[4096];
    int fd = open(path, O_RDONLY);
    ck_assert_int_eq(pread(fd, argv, h.argv_len, sizeof h), h.argv_len);
    close(fd);
    uint32_t crc = mf_crc32c(0, (const char *)&h + 8, offsetof(mf_file_header, static_check) - 8);
    h.static_check = mf_crc32c(crc, argv, h.argv_len);
    write_at(path, &h, sizeof h, 0);
}

static mf_log *read_log(const char *path, int want_rc)
{
    mf_log *log = NULL;
    char err[1024] = "";
    int rc = mf_log_read(path, &log, err, sizeof err);
    ck_assert_msg(rc == want_rc, "mf_log_read(%s) = %d, expected %d: %s %s", path, rc, want_rc,
                  err, log ? log->damage : "");
    return log;
}

static size_t count_type(const mf_log *log, unsigned type)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n_events; i++)
        n += log->events[i].type == type;
    return n;
}

/* ALLOC records in chunk index of the file, counted by walking it. */
static size_t allocs_in_chunk(const char *path, long index)
{
    int fd = open(path, O_RDONLY);
    size_t n = 0;
    for (long at = index * MF_CHUNK_SIZE + 16; at + 8 <= (index + 1) * MF_CHUNK_SIZE;) {
        uint64_t word;
        ck_assert_int_eq(pread(fd, &word, 8, at), 8);
        if (word == 0)
            break;
        n += MF_WORD_TYPE(word) == MF_REC_ALLOC;
        at += MF_WORD_SIZE(word);
    }
    close(fd);
    return n;
}

/* ---- order ------------------------------------------------------------------ */

/*
 * One thread writes blocks at t0+10, t0+20, ...; it then writes "late"
 * records stamped t0+15, t0+5, t0+25 (as CUPTI's thread does), so its
 * chunk's times go back.  Read back: every event in time order, the late
 * ones in their place.
 */
START_TEST(merge_orders_late_records)
{
    start_recording("late");
    uint64_t t0 = mf_clock_now();
    for (uint64_t k = 1; k <= 3; k++)
        mf_recorder_alloc_with_stack(CPU0, 0, t0 + 10 * k, 0x1000 * k, 8, 8, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(CPU0, 0, t0 + 15, 0x15000, 8, 8, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(CPU0, 0, t0 + 5, 0x5000, 8, 8, 0, 0, 0, 0);
    mf_recorder_alloc_with_stack(CPU0, 0, t0 + 25, 0x25000, 8, 8, 0, 0, 0, 0);
    mf_log *log = read_log(finish(), 0);
    const uint64_t want[] = { 0x5000, 0x1000, 0x15000, 0x2000, 0x25000, 0x3000 };
    size_t k = 0;
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (i)
            ck_assert_uint_le(log->events[i - 1].time_ns, e->time_ns);
        if (e->type == MF_REC_ALLOC && e->time_ns >= t0 && e->time_ns <= t0 + 30) {
            ck_assert_uint_lt(k, 6);
            ck_assert_uint_eq(e->alloc.addr, want[k]);
            k++;
        }
    }
    ck_assert_uint_eq(k, 6);
    mf_log_free(log);
}
END_TEST

/* Three logs' events interleave by time; a tie keeps the first log first. */
START_TEST(merge_interleaves_logs)
{
    start_recording("logs");
    uint64_t t0 = mf_clock_now();
    for (int k = 0; k < 3; k++)
        mf_recorder_alloc_with_stack(CPU0, 0, t0 + 10 * (uint64_t)k, 0x100 + (uint64_t)k, 1, 1,
                                     0, 0, 0, 0);
    pid_t child = fork();
    if (child == 0) {
        for (int k = 0; k < 3; k++)
            mf_recorder_alloc_with_stack(CPU0, 0, t0 + 10 * (uint64_t)k + 5 * (k != 1),
                                         0x200 + (uint64_t)k, 1, 1, 0, 0, 0, 0);
        mf_recorder_finish();
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    char child_log[2048];
    snprintf(child_log, sizeof child_log, "%s/memflow-%d.mfl", scratch, (int)child);
    const char *paths[2] = { finish(), child_log };
    mf_strings *pool = mf_strings_new();
    mf_reader *r;
    char err[512];
    ck_assert_int_eq(mf_reader_open(&r, paths, 2, pool, NULL, err, sizeof err), 0);
    ck_assert_int_eq(mf_reader_log(r, 1)->parent, 0);   /* the child's image of the parent */
    mf_event ev[64];
    mf_sample_values sv[64];
    uint64_t order[8];
    size_t k = 0;
    long n;
    while ((n = mf_reader_next(r, ev, sv, 64, UINT64_MAX, err, sizeof err)) > 0)
        for (long i = 0; i < n; i++)
            if (ev[i].type == MF_REC_ALLOC && (ev[i].alloc.addr & ~0x3ffull) == 0 && k < 8)
                order[k++] = ev[i].alloc.addr;
    ck_assert_int_eq(n, 0);
    /* times: 100@0 200@5 101@10 201@10 102@20 202@25 */
    const uint64_t want[] = { 0x100, 0x200, 0x101, 0x201, 0x102, 0x202 };
    ck_assert_uint_eq(k, 6);
    for (size_t i = 0; i < 6; i++)
        ck_assert_uint_eq(order[i], want[i]);
    mf_reader_close(r);
    mf_strings_free(pool);
}
END_TEST

/* ---- damage ------------------------------------------------------------------ */

/* Records in three chunks (each thread's first chunk, then more). */
static const char *three_chunk_log(const char *test)
{
    start_recording(test);
    for (uint64_t i = 0; i < 60000; i++)
        mf_recorder_alloc_with_stack(CPU0, 0, 0, 0x10000 + i * 16, 16, 16, 0, 0, 0, 0);
    return finish();
}

START_TEST(cut_at_chunk_boundary_is_damage)
{
    const char *path = three_chunk_log("cut");
    mf_file_header h;
    read_header(path, &h);
    ck_assert_uint_ge(h.chunks_claimed, 4);
    mf_log *whole = read_log(path, 0);
    size_t all = count_type(whole, MF_REC_ALLOC);
    mf_log_free(whole);
    ck_assert_int_eq(truncate(path, 2 * MF_CHUNK_SIZE), 0);
    mf_log *log = read_log(path, 1);
    char want[4300];
    snprintf(want, sizeof want, "%s: offset 2097152: the file ends after 2 chunks, but the "
             "header says %llu were claimed: the log was cut short and the events of %llu "
             "chunks are missing", path, (unsigned long long)h.chunks_claimed,
             (unsigned long long)h.chunks_claimed - 2);
    ck_assert_str_eq(log->damage, want);
    /* chunk 1 is whole, nothing after it */
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), allocs_in_chunk(path, 1));
    ck_assert_uint_gt(allocs_in_chunk(path, 1), 18000);
    ck_assert_uint_lt(count_type(log, MF_REC_ALLOC), all);
    mf_log_free(log);
}
END_TEST

START_TEST(flipped_argv_len_is_repaired)
{
    const char *path = three_chunk_log("argv_len");
    seal_header(path, NULL);
    mf_log *good = read_log(path, 0);
    size_t all = good->n_events;
    mf_file_header h;
    read_header(path, &h);
    uint8_t flipped = (uint8_t)((h.argv_len >> 8) ^ 0x10);
    write_at(path, &flipped, 1, offsetof(mf_file_header, argv_len) + 1);
    mf_log *log = read_log(path, 1);
    char want[4300];
    snprintf(want, sizeof want, "%s: offset 68: argv_len says %u bytes, the program's arguments "
             "are %u (the header checksum agrees with %u)", path, h.argv_len ^ 0x1000,
             h.argv_len, h.argv_len);
    ck_assert_str_eq(log->damage, want);
    ck_assert_uint_eq(log->header.argv_len, h.argv_len);
    ck_assert_int_eq(log->argc, good->argc);
    ck_assert_str_eq(log->argv[0], good->argv[0]);
    ck_assert_uint_eq(log->n_events, all);
    mf_log_free(log);
    mf_log_free(good);
}
END_TEST

START_TEST(checksum_mismatch_is_reported_not_fatal)
{
    const char *path = three_chunk_log("checksum");
    seal_header(path, NULL);
    mf_file_header h;
    read_header(path, &h);
    uint8_t byte = (uint8_t)(h.pid ^ 1);
    write_at(path, &byte, 1, offsetof(mf_file_header, pid));
    mf_log *log = read_log(path, 1);
    char want[4300];
    snprintf(want, sizeof want, "%s: offset 152: the header checksum 0x%08x does not match the "
             "header (pid, program arguments or run id may be wrong)", path, h.static_check);
    ck_assert_str_eq(log->damage, want);
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 60000);
    mf_log_free(log);
}
END_TEST

START_TEST(version_flip_and_other_version)
{
    const char *path = three_chunk_log("version");
    seal_header(path, NULL);
    uint32_t v = MF_LOG_VERSION ^ 1;
    write_at(path, &v, 4, 8);
    mf_log *log = read_log(path, 1);
    ck_assert_ptr_nonnull(strstr(log->damage, ": offset 8: version is 3, the header checksum says 2"));
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 60000);
    mf_log_free(log);
    v = 99;                                    /* not a flipped bit: another version */
    write_at(path, &v, 4, 8);
    char err[1024];
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "log version 99, this memflow reads version 2"));
}
END_TEST

/* A STRING record whose id is absurd is damage and costs no memory. */
START_TEST(absurd_string_id_costs_nothing)
{
    start_recording("string_id");
    memflow_scope_push("layer", 0);
    for (uint64_t i = 0; i < 1000; i++)
        memflow_record_alloc("cpu/0", P(0x1000 + 64 * i), 8, 8, NULL, 0);
    const char *path = finish();
    /* find the STRING record of "layer:" in chunk 1 and give it id 60,000,000 (a log of 2 MiB holds at most 131,072) */
    int fd = open(path, O_RDWR);
    long at = MF_CHUNK_SIZE + 16;
    for (;;) {
        uint64_t word;
        ck_assert_int_eq(pread(fd, &word, 8, at), 8);
        ck_assert_uint_ne(word, 0);
        if (MF_WORD_TYPE(word) == MF_REC_STRING) {
            char text[8] = "";
            ck_assert_int_eq(pread(fd, text, 6, at + 16), 6);
            if (memcmp(text, "layer:", 6) == 0) {
                word = MF_RECORD_WORD(MF_REC_STRING, MF_WORD_SIZE(word), 60000000u);
                ck_assert_int_eq(pwrite(fd, &word, 8, at), 8);
                break;
            }
        }
        at += MF_WORD_SIZE(word);
    }
    close(fd);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    mf_log *log = read_log(path, 1);
    getrusage(RUSAGE_SELF, &after);
    char want[4300];
    snprintf(want, sizeof want, "%s: offset %ld: bad string record (id 60000000, length 6, "
             "size 24)", path, at);
    ck_assert_str_eq(log->damage, want);
    ck_assert_int_lt(after.ru_maxrss - before.ru_maxrss, 32 * 1024);   /* KiB */
    mf_log_free(log);
}
END_TEST

START_TEST(dropped_events_are_counted)
{
    const char *path = three_chunk_log("dropped");
    mf_file_header h;
    read_header(path, &h);
    h.flags |= MF_HEADER_DROPPED;
    h.dropped_events = 7;
    write_at(path, &h, sizeof h, 0);
    mf_log *log = read_log(path, 1);
    char want[4300];
    snprintf(want, sizeof want, "%s: offset 20: the recorder could not grow the log (disk full "
             "or file size limit): events were dropped (7 events)", path);
    ck_assert_str_eq(log->damage, want);
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 60000);
    mf_log_free(log);
}
END_TEST

/* ---- runs and processes ---------------------------------------------------------- */

START_TEST(logs_of_other_runs_are_refused)
{
    start_recording("runs");
    memflow_record_alloc("cpu/0", P(0x1000), 8, 8, NULL, 0);
    pid_t child = fork();
    if (child == 0) {
        memflow_record_alloc("cpu/0", P(0x2000), 8, 8, NULL, 0);
        mf_recorder_finish();
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    char child_log[2048];
    snprintf(child_log, sizeof child_log, "%s/memflow-%d.mfl", scratch, (int)child);
    const char *paths[2] = { finish(), child_log };
    uint8_t run_a[16] = { 0xaa, 1 }, run_b[16] = { 0xbb, 2 };
    seal_header(paths[0], run_a);
    seal_header(paths[1], run_b);
    mf_strings *pool = mf_strings_new();
    mf_reader *r = NULL;
    char err[2048], want[3000];
    ck_assert_int_eq(mf_reader_open(&r, paths, 2, pool, NULL, err, sizeof err),
                     MF_READER_OTHER_RUNS);
    snprintf(want, sizeof want, "%s (run aa010000000000000000000000000000) and %s (run "
             "bb020000000000000000000000000000) are logs of different runs", paths[0], paths[1]);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "--merge-runs"));
    mf_reader_options merge = { .merge_runs = 1 };
    ck_assert_int_eq(mf_reader_open(&r, paths, 2, pool, &merge, err, sizeof err), 0);
    mf_reader_close(r);
    seal_header(paths[1], run_a);                  /* the same run: merged */
    ck_assert_int_eq(mf_reader_open(&r, paths, 2, pool, NULL, err, sizeof err), 0);
    mf_reader_close(r);
    mf_strings_free(pool);
}
END_TEST

/* An exec'd image follows its first image of the same pid, which ends when
 * the next starts; the process's end mark, when written, wins.  The logs
 * are read in the order the images started, whatever order they are given
 * in (here the later first). */
START_TEST(exec_images_chain_and_end)
{
    start_recording("exec");
    memflow_record_alloc("cpu/0", P(0x1000), 8, 8, NULL, 0);
    const char *first = finish();
    char a[4096], b[4200];
    snprintf(a, sizeof a, "%s", first);
    snprintf(b, sizeof b, "%s/memflow-%d-1.mfl", scratch, (int)getpid());
    /* a second image of the same pid, 1 s later, with an end mark */
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a, b);
    ck_assert_int_eq(system(cmd), 0);
    mf_file_header h;
    read_header(b, &h);
    uint64_t start_a = h.start_mono_ns;
    h.start_mono_ns += 1000000000ull;
    h.end_how = MF_END_EXIT;
    h.end_ns = h.start_mono_ns + 5;
    h.end_status = 3;
    write_at(b, &h, sizeof h, 0);
    const char *paths[2] = { b, a };
    mf_strings *pool = mf_strings_new();
    mf_reader *r;
    char err[512];
    ck_assert_int_eq(mf_reader_open(&r, paths, 2, pool, NULL, err, sizeof err), 0);
    const mf_log_info *first_image = mf_reader_log(r, 0), *second = mf_reader_log(r, 1);
    ck_assert_str_eq(first_image->path, a);
    ck_assert_str_eq(second->path, b);
    ck_assert_int_eq(first_image->next_image, 1);
    ck_assert_int_eq(second->prev_image, 0);
    ck_assert_uint_eq(first_image->end_how, MF_END_EXEC);
    ck_assert_int_eq(first_image->end_inferred, 1);
    ck_assert_uint_eq(first_image->end_ns, start_a + 1000000000ull);
    ck_assert_uint_eq(second->end_how, MF_END_EXIT);
    ck_assert_int_eq(second->end_inferred, 0);
    ck_assert_uint_eq(second->end_ns, h.end_ns > second->last_ns ? h.end_ns : second->last_ns);
    ck_assert_int_eq(second->abnormal, 0);
    mf_event ev[64];
    mf_sample_values sv[64];
    long n;
    int ends = 0;
    while ((n = mf_reader_next(r, ev, sv, 64, UINT64_MAX, err, sizeof err)) > 0)
        for (long i = 0; i < n; i++)
            if (ev[i].type == MF_EV_PROCESS_END) {
                ck_assert_uint_eq(ev[i].log, ends == 0 ? 0 : 1);
                ck_assert_uint_eq(ev[i].end.how & 0xff,
                                  ends == 0 ? MF_END_EXEC : MF_END_EXIT);
                ends++;
            }
    ck_assert_int_eq(ends, 2);
    mf_reader_close(r);
    mf_strings_free(pool);
}
END_TEST

/* ---- stacks -------------------------------------------------------------- */

/* Byte offset in the file where chunk index's records end (its zero word). */
static long chunk_end(const char *path, long index)
{
    int fd = open(path, O_RDONLY);
    long at = index * MF_CHUNK_SIZE + 16;
    for (;;) {
        uint64_t word;
        ck_assert_int_eq(pread(fd, &word, 8, at), 8);
        if (word == 0)
            break;
        at += MF_WORD_SIZE(word);
    }
    close(fd);
    return at;
}

/*
 * STACK, MODULE and CPU_ALLOC_STACK records (as `memflow run --stacks`
 * writes them) appended to a real log's chunk: a CPU_ALLOC_STACK decodes as
 * an allocation with its stack id, a full ALLOC keeps its stack id too; the
 * id leads to the stack's return addresses (mf_reader_stack); the model's
 * blocks keep it; the MODULE record is read past.
 */
START_TEST(stack_ids_reach_events_and_blocks)
{
    start_recording("stacks");
    memflow_record_alloc("cpu/0", P(0x1000), 8, 8, NULL, 0);
    const char *path = finish();
    long at = chunk_end(path, 1);
    mf_chunk_header ch;
    int fd = open(path, O_RDONLY);
    ck_assert_int_eq(pread(fd, &ch, sizeof ch, MF_CHUNK_SIZE), sizeof ch);
    close(fd);
    uint64_t t = mf_clock_now();
    uint8_t buf[512] = { 0 };
    size_t n = 0;
    mf_rec_module mod = { .word = MF_RECORD_WORD(MF_REC_MODULE, sizeof mod, 1), .bias = 0x400000,
                          .start = 0x400000, .end = 0x500000, .build_id_len = 4,
                          .build_id = { 1, 2, 3, 4 } };
    memcpy(buf + n, &mod, sizeof mod);
    n += sizeof mod;
    mf_rec_stack st = { .word = MF_RECORD_WORD(MF_REC_STACK, sizeof st + 24, 7), .depth = 3 };
    uint64_t ips[3] = { 0x401000, 0x402000, 0x403000 };
    memcpy(buf + n, &st, sizeof st);
    memcpy(buf + n + sizeof st, ips, sizeof ips);
    n += sizeof st + sizeof ips;
    mf_rec_time tm = { .word = MF_RECORD_WORD(MF_REC_TIME, sizeof tm, 0), .time_ns = t };
    memcpy(buf + n, &tm, sizeof tm);
    n += sizeof tm;
    mf_rec_cpu_alloc_stack ca = { .word = MF_RECORD_WORD(MF_REC_CPU_ALLOC_STACK, sizeof ca, 10),
                                  .addr = 0xabc000, .requested_flags = 4096, .slack = 0,
                                  .scope = 1, .stack = 7 };
    memcpy(buf + n, &ca, sizeof ca);
    n += sizeof ca;
    mf_rec_alloc fa = { .word = MF_RECORD_WORD(MF_REC_ALLOC, sizeof fa, CPU0), .time_ns = t + 20,
                        .addr = 0xdef000, .requested = 100, .actual = 128, .scope = 1,
                        .tid = ch.tid, .stack = 7 };
    memcpy(buf + n, &fa, sizeof fa);
    n += sizeof fa;
    write_at(path, buf, n, at);

    mf_strings *pool = mf_strings_new();
    mf_reader *r;
    char err[512];
    ck_assert_int_eq(mf_reader_open(&r, &path, 1, pool, NULL, err, sizeof err), 0);
    ck_assert_uint_eq(mf_reader_log(r, 0)->damage->n, 0);
    mf_event ev[64];
    mf_sample_values sv[64];
    long got;
    uint32_t stack_a = 0, stack_b = 0;
    while ((got = mf_reader_next(r, ev, sv, 64, UINT64_MAX, err, sizeof err)) > 0)
        for (long i = 0; i < got; i++) {
            if (ev[i].type != MF_REC_ALLOC)
                continue;
            const mf_ev_alloc *a = &ev[i].alloc;
            if (a->addr == 0xabc000) {
                ck_assert_uint_eq(ev[i].time_ns, t + 10);
                ck_assert_uint_eq(a->requested, 4096);
                stack_a = a->stack;
            } else if (a->addr == 0xdef000) {
                stack_b = a->stack;
            } else {
                ck_assert_uint_eq(a->stack, 0);
            }
        }
    ck_assert_uint_ne(stack_a, 0);
    ck_assert_uint_eq(stack_b, stack_a);
    uint64_t back[8];
    uint32_t log = 99;
    ck_assert_int_eq(mf_reader_stack(r, stack_a, &log, back, 8), 3);
    ck_assert_uint_eq(log, 0);
    ck_assert_uint_eq(back[0], 0x401000);
    ck_assert_uint_eq(back[2], 0x403000);
    ck_assert_int_eq(mf_reader_stack(r, stack_a + 1, &log, back, 8), -1);
    mf_reader_close(r);
    mf_strings_free(pool);

    mf_model *m = mf_model_load(&path, 1, UINT64_MAX, err, sizeof err);
    ck_assert_ptr_nonnull(m);
    int seen = 0;
    for (size_t i = 0; i < m->n_leaks; i++)
        if (m->leaks[i].addr == 0xabc000 || m->leaks[i].addr == 0xdef000) {
            ck_assert_uint_eq(m->leaks[i].stack, stack_a);
            seen++;
        }
    ck_assert_int_eq(seen, 2);
    mf_model_free(m);
}
END_TEST

/* ---- following logs while they are written (mf_follow) ------------------------------ */

/* Events a reader hands out now (all of them up to the end). */
static uint64_t drain_events(mf_reader *r)
{
    mf_event ev[512];
    mf_sample_values sv[512];
    char err[512];
    uint64_t n = 0;
    long got;
    while ((got = mf_reader_next(r, ev, sv, 512, UINT64_MAX, err, sizeof err)) > 0)
        for (long i = 0; i < got; i++)
            n += ev[i].type == MF_REC_ALLOC;
    ck_assert_int_eq(got, 0);
    return n;
}

/* A reader following a log whose chunk 2 was a hole at its first look. */
typedef struct staged_follow {
    mf_strings *pool;
    mf_reader *r;
    int fd;                  /* the log, open for write_back_chunk_2 */
} staged_follow;

static char staged[MF_CHUNK_SIZE];  /* chunk 2 while it is a hole */

/* Follow the log at path (as a staged log: copied_in) with chunk 2 a hole
 * at the first look, as a chunk still staged looks in the log (its bytes
 * kept in staged) - or, with records_first, its records there but its
 * header not yet, as a copy that writes the header last leaves it for a
 * moment.  0, or -1 when this file system has no holes. */
static int follow_without_chunk_2(const char *path, int copied_in, int records_first,
                                  staged_follow *f)
{
    f->fd = open(path, O_RDWR);
    ck_assert_int_ge(f->fd, 0);
    ck_assert_int_eq(pread(f->fd, staged, MF_CHUNK_SIZE, 2 * MF_CHUNK_SIZE), MF_CHUNK_SIZE);
    if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * MF_CHUNK_SIZE,
                  MF_CHUNK_SIZE) != 0) {
        close(f->fd);
        return -1;
    }
    size_t head = sizeof(mf_chunk_header);
    if (records_first)
        ck_assert_int_eq(pwrite(f->fd, staged + head, MF_CHUNK_SIZE - head,
                                2 * MF_CHUNK_SIZE + head), (ssize_t)(MF_CHUNK_SIZE - head));
    char err[512];
    mf_reader_options follow = { .follow = 1 };
    f->pool = mf_strings_new();
    ck_assert_int_eq(mf_reader_open(&f->r, NULL, 0, f->pool, &follow, err, sizeof err), 0);
    ck_assert_int_eq(mf_reader_add_log(f->r, path, copied_in, err, sizeof err), 0);
    return 0;
}

/* The staged chunk reaches the log (chunk 2 written back), and the reader
 * looks at the finished log. */
static void write_back_chunk_2(staged_follow *f)
{
    char err[512];
    ck_assert_int_eq(pwrite(f->fd, staged, MF_CHUNK_SIZE, 2 * MF_CHUNK_SIZE), MF_CHUNK_SIZE);
    close(f->fd);
    ck_assert_int_eq(mf_reader_finish(f->r, err, sizeof err), 0);
}

static void staged_follow_close(staged_follow *f)
{
    mf_reader_close(f->r);
    mf_strings_free(f->pool);
}

/*
 * A chunk that reaches the file after a later one (a thread's chunk still
 * staged while another thread's next chunk is already copied): at one look
 * it is a hole, which the file's data search skips; the next look reads it
 * all the same.  (Before, chunks skipped as holes were never looked at
 * again: a reader following a run lost them.)
 */
START_TEST(chunk_written_after_a_later_one_is_read)
{
    const char *path = three_chunk_log("hole");
    mf_log *whole = read_log(path, 0);
    size_t all = count_type(whole, MF_REC_ALLOC), in_hole = allocs_in_chunk(path, 2);
    mf_log_free(whole);
    ck_assert_uint_gt(in_hole, 18000);
    staged_follow f;
    if (follow_without_chunk_2(path, 0, 0, &f) < 0)
        return;              /* no holes on this file system: nothing to show */
    uint64_t first = drain_events(f.r);
    ck_assert_uint_eq(first, all - in_hole);
    write_back_chunk_2(&f);
    ck_assert_uint_eq(first + drain_events(f.r), all);
    staged_follow_close(&f);
}
END_TEST

/* 60,000 blocks 0x10000 + 16 i of 16 bytes, stamped *t0 + 1 + i, in three
 * chunks. */
static const char *timed_chunk_log(const char *test, uint64_t *t0)
{
    start_recording(test);
    *t0 = mf_clock_now();
    for (uint64_t i = 0; i < 60000; i++)
        mf_recorder_alloc_with_stack(CPU0, 0, *t0 + 1 + i, 0x10000 + i * 16, 16, 16, 0, 0, 0, 0);
    return finish();
}

/* The ALLOC events a reader hands out up to until: each must be the next
 * block of timed_chunk_log (*next counts them). */
static void blocks_in_order(mf_reader *r, uint64_t until, uint64_t *next)
{
    mf_event ev[512];
    mf_sample_values sv[512];
    char err[512];
    long got;
    while ((got = mf_reader_next(r, ev, sv, 512, until, err, sizeof err)) > 0)
        for (long i = 0; i < got; i++)
            if (ev[i].type == MF_REC_ALLOC) {
                ck_assert_msg(ev[i].alloc.addr == 0x10000 + *next * 16,
                              "block %llu: got address 0x%llx, expected 0x%llx",
                              (unsigned long long)*next, (unsigned long long)ev[i].alloc.addr,
                              (unsigned long long)(0x10000 + *next * 16));
                ++*next;
            }
    ck_assert_int_eq(got, 0);
}

/* The blocks handed out up to until are the first `first`; once chunk 2
 * is written back, the rest, each once, in order; none came late and no
 * damage was said.  The reader is closed. */
static void blocks_then_the_rest(staged_follow *f, uint64_t until, uint64_t first)
{
    uint64_t next = 0;
    blocks_in_order(f->r, until, &next);
    ck_assert_uint_eq(next, first);
    write_back_chunk_2(f);
    blocks_in_order(f->r, UINT64_MAX, &next);
    ck_assert_uint_eq(next, 60000);
    ck_assert_uint_eq(mf_reader_late(f->r, NULL), 0);
    ck_assert_uint_eq(mf_reader_log(f->r, 0)->damage->n, 0);
    staged_follow_close(f);
}

/*
 * A chunk listed after a later one whose segment is open (a thread's chunk
 * still staged while the other thread's next chunk was already copied:
 * memflow run's two-thread churn).  Chunk 2 is a hole at the first look;
 * the reader hands out everything up to its last block, which opens chunk
 * 3's segment (its first 64 KiB window read) without handing any of it
 * out; then chunk 2 is written, and listed before chunk 3.  Every block
 * comes out once, in order, and nothing counts as late.  (Before, the open
 * segment kept chunk 3's old place in the list, so its next window was read
 * from chunk 2: the rest of chunk 3 was lost, 17,000 blocks, and nothing
 * said so.)
 */
START_TEST(chunk_listed_before_an_open_segment_is_read)
{
    uint64_t t0;
    const char *path = timed_chunk_log("hole_before_open", &t0);
    uint64_t n1 = allocs_in_chunk(path, 1), n2 = allocs_in_chunk(path, 2),
             n3 = allocs_in_chunk(path, 3);
    ck_assert_uint_gt(n2, 4096);
    ck_assert_uint_gt(n3, 4096); /* more than one window of chunk 3 */
    staged_follow f;
    if (follow_without_chunk_2(path, 1, 0, &f) < 0)
        return;              /* no holes on this file system: nothing to show */
    blocks_then_the_rest(&f, t0 + n1 + n2, n1);
}
END_TEST

/* Chunk 2 (its bytes in staged) into fd as memflow run's copy leaves it
 * for a moment: its first 100 records, sealed there, then the word of the
 * 101st with zeros where its block's address and size go; with whole, the
 * rest of the chunk is zeros too, else it stays as the file had it. */
static void write_chunk_2_half_copied(int fd, int whole)
{
    static char copying[MF_CHUNK_SIZE];
    size_t sealed = sizeof(mf_chunk_header);
    for (int k = 0; k < 100; k++) {
        uint64_t word;
        memcpy(&word, staged + sealed, 8);
        ck_assert_uint_eq(MF_WORD_TYPE(word), MF_REC_ALLOC);
        sealed += MF_WORD_SIZE(word);
    }
    memset(copying, 0, sizeof copying);
    memcpy(copying, staged, sealed + 8);
    mf_chunk_seal(copying, sealed);
    size_t len = whole ? MF_CHUNK_SIZE : sealed + 8;
    ck_assert_int_eq(pwrite(fd, copying, len, 2 * MF_CHUNK_SIZE), (ssize_t)len);
}

/*
 * A staged chunk while memflow run copies it into the log (its process
 * still runs): a pwrite copies the bytes in the order they stand, so a
 * record's word (its first bytes) is in the file before the rest of it,
 * and the copy's seal is written last (stage_slots.c).  Chunk 2 holds its
 * first 100 records, sealed there, then the word of the 101st with zeros
 * where its block's address and size go.  A reader sees 100 blocks of
 * chunk 2, no more, until the copy ends (the rest and the whole header);
 * then every block comes out once, in order, and nothing counts as late.
 * (Before, the reader believed the half-copied record: a block of 0 bytes
 * at address 0, as memflow run's analysis of a two-thread churn showed now
 * and then.)
 */
START_TEST(half_copied_record_past_the_seal_waits)
{
    uint64_t t0;
    const char *path = timed_chunk_log("half_copied", &t0);
    uint64_t n1 = allocs_in_chunk(path, 1);
    staged_follow f;
    if (follow_without_chunk_2(path, 1, 0, &f) < 0)
        return;              /* no holes on this file system: nothing to show */
    write_chunk_2_half_copied(f.fd, 0);
    char err[512];
    ck_assert_int_eq(mf_reader_refresh(f.r, err, sizeof err), 0);
    blocks_then_the_rest(&f, t0 + n1 + 100, n1 + 100);  /* until: the 100 blocks' times */
}
END_TEST

/*
 * The same copy seen by a reader that opens the log at once (memflow serve
 * of a run in progress, mf_reader_options.staged): chunk 2 holds its first
 * 100 records, sealed there, then the word of the 101st with zeros where
 * its block's address and size go; chunks 1 and 3 are whole.  Opened as
 * staged, the reader hands out chunk 2's 100 sealed blocks and no block at
 * address 0.  Opened as before (serve did not know the log was staged), it
 * believes the half-copied record: one block at address 0.
 */
START_TEST(staged_log_opened_while_copied)
{
    uint64_t t0;
    const char *path = timed_chunk_log("staged_open", &t0);
    size_t in_2 = allocs_in_chunk(path, 2);
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, staged, MF_CHUNK_SIZE, 2 * MF_CHUNK_SIZE), MF_CHUNK_SIZE);
    write_chunk_2_half_copied(fd, 1);
    close(fd);
    for (int as_staged = 1; as_staged >= 0; as_staged--) {
        mf_reader_options ro = { .staged = as_staged };
        mf_strings *pool = mf_strings_new();
        mf_reader *r;
        char err[512];
        ck_assert_int_eq(mf_reader_open(&r, &path, 1, pool, &ro, err, sizeof err), 0);
        mf_event ev[512];
        mf_sample_values sv[512];
        uint64_t blocks = 0, at_zero = 0;
        long got;
        while ((got = mf_reader_next(r, ev, sv, 512, UINT64_MAX, err, sizeof err)) > 0)
            for (long i = 0; i < got; i++)
                if (ev[i].type == MF_REC_ALLOC) {
                    blocks++;
                    at_zero += ev[i].alloc.addr == 0;
                }
        ck_assert_int_eq(got, 0);
        ck_assert_uint_eq(at_zero, as_staged ? 0 : 1);
        ck_assert_uint_eq(blocks, 60000 - in_2 + 100 + (as_staged ? 0 : 1));
        mf_reader_close(r);
        mf_strings_free(pool);
    }
}
END_TEST

/*
 * A staged log whose process is gone is still copied into until memflow
 * run's last copy (the drain runs on; the reader is told by
 * mf_reader_finish).  The log of a forked child, reaped, with chunk 2's
 * records in the file but its header not yet (a copy writes it last): the
 * reader waits for the header, judging neither the chunk nor the log, and
 * once the header is there reads every block once, in order, with no
 * damage said.  (Before, a log whose process was gone was taken as
 * finished: chunk 2 was listed for its data, with no owner thread - the
 * blocks of memflow run's churn with thread 0 in profile.json - or judged
 * a chunk whose header is zeros, its records lost.)
 */
START_TEST(staged_log_is_copied_into_after_its_process)
{
    uint64_t t0;
    start_recording("copied_after");
    t0 = mf_clock_now();
    pid_t child = fork();
    if (child == 0) {
        for (uint64_t i = 0; i < 60000; i++)
            mf_recorder_alloc_with_stack(CPU0, 0, t0 + 1 + i, 0x10000 + i * 16, 16, 16, 0, 0, 0, 0);
        mf_recorder_finish();
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    finish();
    char path[4200];
    snprintf(path, sizeof path, "%s/memflow-%d.mfl", scratch, (int)child);
    ck_assert_uint_gt(allocs_in_chunk(path, 2), 4096);
    staged_follow f;
    if (follow_without_chunk_2(path, 1, 1, &f) < 0)
        return;              /* no holes on this file system: nothing to show */
    blocks_then_the_rest(&f, t0, 0);
}
END_TEST

/* The statistics (JSON) and the Chrome trace of a model, one text. */
static char *outputs_of(mf_model *m)
{
    mf_stats_options opt = { .json = 1 };
    char *stats = mf_stats_string(m, &opt);
    mf_sink trace = { 0 };
    ck_assert_int_eq(mf_chrome_trace_write(m, &trace), 0);
    char *t = mf_sink_take(&trace);
    ck_assert_ptr_nonnull(stats);
    ck_assert_ptr_nonnull(t);
    size_t n = strlen(stats) + strlen(t) + 2;
    char *all = malloc(n);
    snprintf(all, n, "%s\n%s", stats, t);
    free(stats);
    free(t);
    return all;
}

/* Events of phase k (k = 0, 1, 2) at t0 + 100k + 10..50: blocks in a scope
 * of their own, named, freed in the next phase; a forked child's log joins
 * in phase 1. */
static void phase(uint64_t t0, int k, const char *scope, const char *name)
{
    uint32_t sc = mf_recorder_intern(scope, strlen(scope));
    uint32_t nm = mf_recorder_intern(name, strlen(name));
    uint64_t at = t0 + 100 * (uint64_t)k;
    for (uint64_t i = 1; i <= 4; i++)
        mf_recorder_alloc_with_stack(CPU0, 0, at + 10 * i, 0x10000 * (uint64_t)(k + 1) + 0x100 * i,
                                     64 * i, 64 * i, sc, nm, 0, 0);
    if (k > 0)
        for (uint64_t i = 1; i <= 4; i++)
            mf_recorder_free_event(CPU0, 0, at + 10 * i + 5, 0x10000 * (uint64_t)k + 0x100 * i);
}

/* Phase k recorded by a forked child (a process with a log of its own),
 * waited for; the path of its log (static storage). */
static const char *child_phase(uint64_t t0, int k, const char *scope, const char *name)
{
    static char child_log[4200];
    pid_t child = fork();
    if (child == 0) {
        phase(t0, k, scope, name);
        mf_recorder_finish();
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    snprintf(child_log, sizeof child_log, "%s/memflow-%d.mfl", scratch, (int)child);
    return child_log;
}

/*
 * Logs followed while written, read only up to times no record comes
 * before (the horizon memflow run keeps), give the model of the finished
 * logs exactly: the same statistics and trace, byte for byte, strings
 * first named in later phases included, and a child's log that appears in
 * the middle.  Nothing counts as late.
 */
START_TEST(follow_is_the_load_when_nothing_is_late)
{
    start_recording("follow");
    uint64_t t0 = mf_clock_now();
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", mf_recorder_log_path());
    char err[1024];
    mf_follow *f = mf_follow_new(NULL, 0, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    ck_assert_int_eq(mf_follow_add_log(f, parent, 0, err, sizeof err), 0);
    phase(t0, 0, "first:", "a");
    ck_assert_int_eq(mf_follow_step(f, t0 + 50, UINT64_MAX, err, sizeof err), 1);
    uint64_t fed = mf_follow_fed(f);
    ck_assert_uint_ge(fed, 4);
    const char *child_log = child_phase(t0, 1, "child:", "c");
    ck_assert_int_eq(mf_follow_add_log(f, child_log, 0, err, sizeof err), 0);
    phase(t0, 1, "second:", "b");
    ck_assert_int_eq(mf_follow_step(f, t0 + 150, UINT64_MAX, err, sizeof err), 1);
    ck_assert_uint_gt(mf_follow_fed(f), fed);
    phase(t0, 2, "third:", "a");
    const char *paths[2] = { finish(), child_log };
    ck_assert_int_eq(mf_follow_finish(f, err, sizeof err), 0);
    uint64_t by = 1;
    ck_assert_uint_eq(mf_follow_late(f, &by), 0);
    ck_assert_uint_eq(by, 0);
    int rc;
    mf_model *live = mf_follow_take(f, &rc);
    mf_model *load = mf_model_load(paths, 2, UINT64_MAX, err, sizeof err);
    ck_assert_msg(load != NULL, "%s", err);
    char *a = outputs_of(live), *b = outputs_of(load);
    ck_assert_str_eq(a, b);
    ck_assert_ptr_nonnull(strstr(a, "\"third:\""));
    free(a);
    free(b);
    mf_model_free(live);
    mf_model_free(load);
}
END_TEST

/*
 * A record stamped before what was already fed (as CUPTI's buffers come)
 * counts as late, by how much; the finish keeps the count: memflow run
 * then builds the model again from the finished logs.
 */
START_TEST(late_record_is_counted)
{
    start_recording("follow_late");
    uint64_t t0 = mf_clock_now();
    char err[1024];
    mf_follow *f = mf_follow_new(NULL, 0, err, sizeof err);
    ck_assert_msg(f != NULL, "%s", err);
    ck_assert_int_eq(mf_follow_add_log(f, mf_recorder_log_path(), 0, err, sizeof err), 0);
    for (uint64_t k = 1; k <= 3; k++)
        mf_recorder_alloc_with_stack(CPU0, 0, t0 + 10 * k, 0x1000 * k, 8, 8, 0, 0, 0, 0);
    ck_assert_int_eq(mf_follow_step(f, t0 + 30, UINT64_MAX, err, sizeof err), 1);
    uint64_t by = 7;
    ck_assert_uint_eq(mf_follow_late(f, &by), 0);
    mf_recorder_alloc_with_stack(CPU0, 0, t0 + 20, 0x20000, 8, 8, 0, 0, 0, 0);  /* 10 ns late */
    ck_assert_int_ge(mf_follow_step(f, t0 + 40, UINT64_MAX, err, sizeof err), 0);
    ck_assert_uint_eq(mf_follow_late(f, &by), 1);
    ck_assert_uint_eq(by, 10);
    finish();
    ck_assert_int_eq(mf_follow_finish(f, err, sizeof err), 0);
    ck_assert_uint_eq(mf_follow_late(f, NULL), 1);
    mf_follow_free(f);
}
END_TEST

/* Append n bytes of records at the end of chunk 1 of path (the first
 * chunk of the thread that recorded); the new end. */
static long append_records(const char *path, long at, const void *records, size_t n)
{
    write_at(path, records, n, at);
    return at + (long)n;
}

/* The stack ids of the ALLOC events a reader hands out now, by address
 * 0xa000 and 0xb000. */
static void stacks_of_allocs(mf_reader *r, uint32_t *a, uint32_t *b)
{
    mf_event ev[64];
    mf_sample_values sv[64];
    char err[512];
    long got;
    while ((got = mf_reader_next(r, ev, sv, 64, UINT64_MAX, err, sizeof err)) > 0)
        for (long i = 0; i < got; i++)
            if (ev[i].type == MF_REC_ALLOC && ev[i].alloc.addr == 0xa000)
                *a = ev[i].alloc.stack;
            else if (ev[i].type == MF_REC_ALLOC && ev[i].alloc.addr == 0xb000)
                *b = ev[i].alloc.stack;
    ck_assert_int_eq(got, 0);
}

/*
 * STACK_NODE stacks read while the log is written: a node whose caller's
 * node, or whose FRAME record, is not in the log yet when its stack is
 * read is cut there (the caller) or has an unknown frame (0), as a
 * reader of the finished log never sees; the records that come later
 * count as late (mf_reader_late), so memflow run builds its outputs from
 * the finished logs instead.  The stack read again then is whole, as a
 * reader of the finished log reads it with nothing late.
 */
START_TEST(stack_node_whose_caller_comes_late_counts)
{
    start_recording("node_late");
    memflow_record_alloc("cpu/0", P(0x1000), 8, 8, NULL, 0);
    const char *path = finish();
    long at = chunk_end(path, 1);
    uint64_t t = mf_clock_now();
    uint8_t buf[512] = { 0 };
    size_t n = 0;
    /* first look: node 2 (0x402000, its caller node 1 missing), node 3 (a
     * symbolic frame, FRAME 5 missing) and an allocation with each */
    mf_rec_stack_node inner = { .word = MF_RECORD_WORD(MF_REC_STACK_NODE, sizeof inner, 2),
                                .entry = 0x402000, .caller = 1, .depth = 2 };
    mf_rec_stack_node python = { .word = MF_RECORD_WORD(MF_REC_STACK_NODE, sizeof python, 3),
                                 .entry = mf_stack_frame_entry(5), .caller = 0, .depth = 1 };
    mf_rec_time tm = { .word = MF_RECORD_WORD(MF_REC_TIME, sizeof tm, 0), .time_ns = t };
    mf_rec_cpu_alloc_stack ca = { .word = MF_RECORD_WORD(MF_REC_CPU_ALLOC_STACK, sizeof ca, 10),
                                  .addr = 0xa000, .requested_flags = 64, .scope = 1, .stack = 2 };
    mf_rec_cpu_alloc_stack cb = { .word = MF_RECORD_WORD(MF_REC_CPU_ALLOC_STACK, sizeof cb, 20),
                                  .addr = 0xb000, .requested_flags = 64, .scope = 1, .stack = 3 };
    memcpy(buf + n, &inner, sizeof inner), n += sizeof inner;
    memcpy(buf + n, &python, sizeof python), n += sizeof python;
    memcpy(buf + n, &tm, sizeof tm), n += sizeof tm;
    memcpy(buf + n, &ca, sizeof ca), n += sizeof ca;
    memcpy(buf + n, &cb, sizeof cb), n += sizeof cb;
    at = append_records(path, at, buf, n);

    mf_strings *pool = mf_strings_new();
    mf_reader *r;
    char err[512];
    mf_reader_options follow = { .follow = 1 };
    ck_assert_int_eq(mf_reader_open(&r, &path, 1, pool, &follow, err, sizeof err), 0);
    uint32_t a = 0, b = 0;
    stacks_of_allocs(r, &a, &b);
    ck_assert_uint_ne(a, 0);
    ck_assert_uint_ne(b, 0);
    uint64_t back[8];
    uint32_t log = 99;
    ck_assert_int_eq(mf_reader_stack(r, a, &log, back, 8), 1);   /* cut at the caller */
    ck_assert_uint_eq(log, 0);
    ck_assert_uint_eq(back[0], 0x402000);
    ck_assert_int_eq(mf_reader_stack(r, b, &log, back, 8), 1);
    ck_assert_uint_eq(back[0], mf_stack_frame_entry(0));         /* the frame unknown */
    ck_assert_uint_eq(mf_reader_late(r, NULL), 0);

    /* the next look: node 1 and FRAME 5 (its texts) reach the log */
    n = 0;
    memset(buf, 0, sizeof buf);
    mf_rec_stack_node outer = { .word = MF_RECORD_WORD(MF_REC_STACK_NODE, sizeof outer, 1),
                                .entry = 0x401000, .caller = 0, .depth = 1 };
    memcpy(buf + n, &outer, sizeof outer), n += sizeof outer;
    mf_rec_string fn = { .word = MF_RECORD_WORD(MF_REC_STRING, sizeof fn + 8, 900), .len = 5 };
    memcpy(buf + n, &fn, sizeof fn), memcpy(buf + n + sizeof fn, "train", 5);
    n += sizeof fn + 8;
    mf_rec_frame fr = { .word = MF_RECORD_WORD(MF_REC_FRAME, sizeof fr, 5), .function = 900,
                        .file = 0, .line = 7, .kind = MF_FRAME_PYTHON };
    memcpy(buf + n, &fr, sizeof fr), n += sizeof fr;
    append_records(path, at, buf, n);
    ck_assert_int_eq(mf_reader_finish(r, err, sizeof err), 0);
    ck_assert_uint_eq(mf_reader_late(r, NULL), 2);
    ck_assert_int_eq(mf_reader_stack(r, a, &log, back, 8), 2);   /* whole now */
    ck_assert_uint_eq(back[0], 0x402000);
    ck_assert_uint_eq(back[1], 0x401000);
    mf_reader_close(r);

    /* a reader of the finished log: the whole stacks, nothing late */
    ck_assert_int_eq(mf_reader_open(&r, &path, 1, pool, NULL, err, sizeof err), 0);
    ck_assert_uint_eq(mf_reader_log(r, 0)->damage->n, 0);
    a = b = 0;
    stacks_of_allocs(r, &a, &b);
    ck_assert_int_eq(mf_reader_stack(r, a, &log, back, 8), 2);
    ck_assert_uint_eq(back[0], 0x402000);
    ck_assert_uint_eq(back[1], 0x401000);
    ck_assert_int_eq(mf_reader_stack(r, b, &log, back, 8), 1);
    ck_assert(mf_stack_entry_is_frame(back[0]));
    const mf_symbolic_frame *f = mf_reader_frame(r, mf_stack_entry_frame(back[0]));
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(mf_strings_get(pool, f->function), "train");
    ck_assert_uint_eq(f->line, 7);
    ck_assert_uint_eq(mf_reader_late(r, NULL), 0);
    mf_reader_close(r);
    mf_strings_free(pool);
}
END_TEST

/* The same logs named in either order read as one: the same events, in
 * the same order, with the same string ids. */
START_TEST(logs_read_in_the_order_they_started)
{
    start_recording("order_given");
    uint64_t t0 = mf_clock_now();
    phase(t0, 0, "p:", "x");
    const char *child_log = child_phase(t0, 1, "q:", "y");
    const char *parent = finish();
    const char *one[2] = { parent, child_log }, *two[2] = { child_log, parent };
    char err[1024];
    mf_model *a = mf_model_load(one, 2, UINT64_MAX, err, sizeof err);
    mf_model *b = mf_model_load(two, 2, UINT64_MAX, err, sizeof err);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(a->processes[0].log_path, parent);
    ck_assert_str_eq(b->processes[0].log_path, parent);
    char *x = outputs_of(a), *y = outputs_of(b);
    ck_assert_str_eq(x, y);
    free(x);
    free(y);
    mf_model_free(a);
    mf_model_free(b);
}
END_TEST

static Suite *reader_suite(void)
{
    Suite *s = suite_create("reader");
    TCase *order = tcase_create("order");
    tcase_add_test(order, merge_orders_late_records);
    tcase_add_test(order, merge_interleaves_logs);
    suite_add_tcase(s, order);
    TCase *damage = tcase_create("damage");
    tcase_add_test(damage, cut_at_chunk_boundary_is_damage);
    tcase_add_test(damage, flipped_argv_len_is_repaired);
    tcase_add_test(damage, checksum_mismatch_is_reported_not_fatal);
    tcase_add_test(damage, version_flip_and_other_version);
    tcase_add_test(damage, absurd_string_id_costs_nothing);
    tcase_add_test(damage, dropped_events_are_counted);
    suite_add_tcase(s, damage);
    TCase *runs = tcase_create("runs");
    tcase_add_test(runs, logs_of_other_runs_are_refused);
    tcase_add_test(runs, exec_images_chain_and_end);
    tcase_add_test(runs, stack_ids_reach_events_and_blocks);
    suite_add_tcase(s, runs);
    TCase *follow = tcase_create("follow");
    tcase_add_test(follow, chunk_written_after_a_later_one_is_read);
    tcase_add_test(follow, chunk_listed_before_an_open_segment_is_read);
    tcase_add_test(follow, half_copied_record_past_the_seal_waits);
    tcase_add_test(follow, staged_log_opened_while_copied);
    tcase_add_test(follow, staged_log_is_copied_into_after_its_process);
    tcase_add_test(follow, follow_is_the_load_when_nothing_is_late);
    tcase_add_test(follow, late_record_is_counted);
    tcase_add_test(follow, stack_node_whose_caller_comes_late_counts);
    tcase_add_test(follow, logs_read_in_the_order_they_started);
    suite_add_tcase(s, follow);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reader_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
