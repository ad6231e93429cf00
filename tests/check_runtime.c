/*
 * check_runtime.c - Check suite of core/: configuration, scopes, the recorder
 * and the log reader, with exact expected values.
 *
 * Logs are real: each test runs in its own forked process (CK_FORK), points
 * the recorder at a fresh folder, records through the public API and reads
 * the file back with mf_log_read.  Damage tests cut and overwrite bytes of
 * such a real log.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checksum.h"
#include "recorder.h"
#include "memflow.h"
#include "config.h"
#include "log_in_memory.h"
#include "log_writer.h"
#include "stage.h"
#include "stage_drain.h"
#include "stage_slots.h"

static char scratch[4096];

/* A fresh output folder for this test, set as the config path. */
static void use_scratch(const char *name)
{
    const char *top = getenv("top_builddir");
    snprintf(scratch, sizeof scratch, "%s/tests/out/check_runtime/%s", top ? top : ".", name);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    ck_assert_int_eq(system(cmd), 0);
    const char *k = "path", *v = scratch;
    ck_assert_int_eq(memflow_set_config(1, &k, &v), 0);
}

static mf_log *read_own_log(void)
{
    mf_log *log;
    char err[512];
    const char *path = mf_recorder_log_path();
    ck_assert_ptr_nonnull(path);
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), 0);
    return log;
}

static size_t count_type(const mf_log *log, unsigned type)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n_events; i++)
        n += log->events[i].type == type;
    return n;
}

static const mf_event *nth_of_type(const mf_log *log, unsigned type, size_t nth)
{
    for (size_t i = 0; i < log->n_events; i++)
        if (log->events[i].type == type && nth-- == 0)
            return &log->events[i];
    return NULL;
}

/* ---- configuration ---------------------------------------------------- */

START_TEST(config_unknown_key_names_key_and_accepted)
{
    const char *k[] = { "sample_rate", "profile_everything" }, *v[] = { "5", "1" };
    ck_assert_int_eq(memflow_set_config(2, k, v), -1);
    const char *e = memflow_last_error();
    ck_assert_ptr_nonnull(strstr(e, "unknown key 'profile_everything'"));
    ck_assert_ptr_nonnull(strstr(e, "sample_rate"));
    /* all or nothing: sample_rate was not applied */
    ck_assert_uint_eq(mf_config_get()->sample_rate, 0);
    /* the accepted keys are the key table's, each once, in its order */
    ck_assert_str_eq(mf_config_keys(),
                     "filename, path, format, formats, profile_all, profile_memory, "
                     "profile_api, profile_device, continuous_dump, dump_period, "
                     "aggregate_stats, gpu_memory_profile_filename_prefix, sample_rate, stacks, "
                     "torch_scopes, python_stacks, torch_history, cupti");
    ck_assert_ptr_nonnull(strstr(e, mf_config_keys()));
    char var[32];
    mf_config_variable("gpu_memory_profile_filename_prefix", var, sizeof var);
    ck_assert_str_eq(var, "MEMFLOW_GPU_MEMORY_PROFILE_FILE"); /* cut short at 31 bytes */
    mf_config_variable("sample_rate", var, sizeof var);
    ck_assert_str_eq(var, "MEMFLOW_SAMPLE_RATE");
}
END_TEST

START_TEST(config_bad_values)
{
    static const char *const cases[][3] = {
        { "sample_rate", "-3", "a whole number" },
        { "sample_rate", "12abc", "a whole number" },
        { "profile_memory", "maybe", "true/false" },
        { "dump_period", "0", "seconds from 0.001 to 86400" },
        { "dump_period", "1e300", "seconds from 0.001 to 86400" },
        { "dump_period", "0.0005", "seconds from 0.001 to 86400" },
        { "dump_period", "nan", "seconds from 0.001 to 86400" },
        { "sample_rate", "1000000001", "from 0 (off) to 1000000000" },
        { "sample_rate", "99999999999999999999999", "from 0 (off) to 1000000000" },
        { "formats", "memory_flow.svg,flame.html", "memory_flow.svg" },
        { "path", "", "non-empty path" },
        { "filename", "../../x", "a file name (no '/', not '.' or '..')" },
        { "filename", "traces/profile.json", "a file name" },
        { "filename", "..", "a file name" },
        { "filename", "", "a file name" },
        { "gpu_memory_profile_filename_prefix", "../gpu", "a file name" },
        { "gpu_memory_profile_filename_prefix", ".", "a file name" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *k = cases[i][0], *v = cases[i][1];
        ck_assert_int_eq(memflow_set_config(1, &k, &v), -1);
        ck_assert_msg(strstr(memflow_last_error(), cases[i][2]) != NULL, "%s=%s: %s", k, v,
                      memflow_last_error());
        ck_assert_ptr_nonnull(strstr(memflow_last_error(), k));
    }
}
END_TEST

START_TEST(config_good_values)
{
    const char *k[] = { "sample_rate", "profile_all", "dump_period", "formats", "filename",
                        "gpu_memory_profile_filename_prefix", "format" };
    const char *v[] = { "250", "True", "0.5", "memory_flow.png,profile.json", "t.json",
                        "gpumem", "chrome_timeline.json" };
    /* the ends of the ranges are accepted */
    const char *edge_k[] = { "sample_rate", "dump_period" }, *edge_v[] = { "1000000000", "86400" };
    ck_assert_int_eq(memflow_set_config(2, edge_k, edge_v), 0);
    edge_v[1] = "0.001";
    ck_assert_int_eq(memflow_set_config(2, edge_k, edge_v), 0);
    ck_assert_int_eq(memflow_set_config(7, k, v), 0);
    const mf_config *c = mf_config_get();
    ck_assert_uint_eq(c->sample_rate, 250);
    ck_assert_int_eq(c->profile_all, 1);
    ck_assert(c->dump_period == 0.5);
    ck_assert_str_eq(c->formats, "chrome_timeline.json");
    ck_assert_str_eq(c->filename, "t.json");
    ck_assert_str_eq(c->gpu_memory_profile_filename_prefix, "gpumem");
}
END_TEST

START_TEST(config_from_environment)
{
    setenv("MEMFLOW_SAMPLE_RATE", "7", 1);
    char err[512];
    ck_assert_int_eq(mf_config_apply_env(err, sizeof err), 0);
    ck_assert_uint_eq(mf_config_get()->sample_rate, 7);
    setenv("MEMFLOW_PROFILE_API", "sometimes", 1);
    ck_assert_int_eq(mf_config_apply_env(err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "MEMFLOW_PROFILE_API"));
    ck_assert_ptr_nonnull(strstr(err, "sometimes"));
}
END_TEST

/* A MEMFLOW_ variable that is no key's (a typo) is an error naming it;
 * memflow's own variables are not. */
START_TEST(config_unknown_variable_is_reported)
{
    char err[512];
    setenv("MEMFLOW_RUN_ID", "00112233445566778899aabbccddeeff", 1);
    setenv("MEMFLOW_AUTOSTART", "0", 1);
    setenv("MEMFLOW_CLOCK", "monotonic", 1);
    setenv("MEMFLOW_LIBDIR", "/nowhere", 1);
    ck_assert_int_eq(mf_config_apply_env(err, sizeof err), 0);
    setenv("MEMFLOW_SAMPEL_RATE", "5", 1);
    ck_assert_int_eq(mf_config_apply_env(err, sizeof err), -1);
    ck_assert_msg(strstr(err, "unknown variable MEMFLOW_SAMPEL_RATE;") != NULL, "%s", err);
    ck_assert_ptr_nonnull(strstr(err, "sample_rate"));
}
END_TEST

/* ---- scopes ------------------------------------------------------------ */

START_TEST(scope_mxnet_rules)
{
    ck_assert_str_eq(memflow_scope_current(), "<unk>:");
    ck_assert_int_eq(memflow_scope_push("net", 1), 0);      /* append onto <unk>: */
    ck_assert_str_eq(memflow_scope_current(), "net:");
    ck_assert_int_eq(memflow_scope_push("dense0", 1), 0);
    ck_assert_str_eq(memflow_scope_current(), "net:dense0:");
    ck_assert_int_eq(memflow_scope_push("backward:", 0), 0); /* trailing ':' kept once */
    ck_assert_str_eq(memflow_scope_current(), "backward:");
    ck_assert_int_eq(memflow_scope_pop(), 0);
    ck_assert_int_eq(memflow_scope_pop(), 0);
    ck_assert_str_eq(memflow_scope_current(), "net:");
    ck_assert_int_eq(memflow_scope_pop(), 0);
    ck_assert_int_eq(memflow_scope_pop(), -1);
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "nothing to pop"));
    ck_assert_int_eq(memflow_scope_push(NULL, 0), -1);
    MEMFLOW_SCOPE("block") {
        ck_assert_str_eq(memflow_scope_current(), "block:");
        MEMFLOW_SCOPE_APPEND("inner")
            ck_assert_str_eq(memflow_scope_current(), "block:inner:");
    }
    ck_assert_str_eq(memflow_scope_current(), "<unk>:");
}
END_TEST

static void *other_thread_scope(void *arg)
{
    (void)arg;
    /* a new thread starts at the default, whatever the main thread holds */
    ck_assert_str_eq(memflow_scope_current(), "<unk>:");
    memflow_scope_push("worker", 0);
    return (void *)memflow_scope_current();
}

START_TEST(scope_is_per_thread)
{
    memflow_scope_push("main", 0);
    pthread_t t;
    void *seen;
    pthread_create(&t, NULL, other_thread_scope, NULL);
    pthread_join(t, &seen);
    ck_assert_str_eq((const char *)seen, "worker:");
    ck_assert_str_eq(memflow_scope_current(), "main:");
}
END_TEST

START_TEST(scope_overflow_is_an_error_and_balanced)
{
    int pushed = 0, failed = 0;
    for (int i = 0; i < 300; i++) {
        if (memflow_scope_push("deep", 1) == 0)
            pushed++;
        else
            failed++;
    }
    ck_assert_int_eq(pushed, 255);
    ck_assert_int_eq(failed, 45);
    for (int i = 0; i < 300; i++)
        ck_assert_int_eq(memflow_scope_pop(), 0);
    ck_assert_str_eq(memflow_scope_current(), "<unk>:");
}
END_TEST

/* ---- recorder -> log -> reader ---------------------------------------- */

START_TEST(record_roundtrip_exact)
{
    use_scratch("roundtrip");
    ck_assert_int_eq(memflow_record_alloc("cpu/0", (void *)0x1000, 10, 16, "x", 0), 0);
    /* not running yet: nothing recorded, and no log */
    ck_assert_ptr_null(mf_recorder_log_path());
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    memflow_scope_push("layer0", 0);
    ck_assert_int_eq(memflow_record_alloc("gpu/1", (void *)0x7f0000001000, 5120, 8192,
                                          "weight", MEMFLOW_ALLOC_REUSED), 0);
    memflow_scope_pop();
    ck_assert_int_eq(memflow_record_alloc("cpu/0", (void *)0x2000, 100, 112, NULL, 0), 0);
    ck_assert_int_eq(memflow_record_free("gpu/1", (void *)0x7f0000001000), 0);
    ck_assert_int_eq(memflow_record_alloc("tpu/0", (void *)0x1, 1, 1, NULL, 0), -1);
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "bad device 'tpu/0'"));
    ck_assert_int_eq(memflow_record_free("gpu/256", (void *)0x1), -1);
    memflow_pause();
    memflow_record_alloc("cpu/0", (void *)0x3000, 1, 1, NULL, 0); /* paused: not kept */
    memflow_resume();
    mf_recorder_finish();

    mf_log *log = read_own_log();
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 2);
    ck_assert_uint_eq(count_type(log, MF_REC_FREE), 1);
    const mf_event *a = nth_of_type(log, MF_REC_ALLOC, 0);
    ck_assert_uint_eq(a->alloc.addr, 0x7f0000001000);
    ck_assert_uint_eq(a->alloc.requested, 5120);
    ck_assert_uint_eq(a->alloc.actual, 8192);
    ck_assert_uint_eq(a->device, MF_DEVICE(MF_DEVICE_GPU, 1));
    ck_assert_str_eq(mf_log_string(log, a->alloc.scope), "layer0:");
    ck_assert_str_eq(mf_log_string(log, a->alloc.name), "weight");
    ck_assert_uint_eq(a->alloc.flags & MF_FLAG_REUSED, MF_FLAG_REUSED);
    ck_assert_uint_eq(a->tid, (uint32_t)gettid());
    const mf_event *b = nth_of_type(log, MF_REC_ALLOC, 1);
    ck_assert_str_eq(mf_log_string(log, b->alloc.scope), "<unk>:");
    ck_assert_str_eq(mf_log_string(log, b->alloc.name), "unknown");
    ck_assert_uint_eq(b->device, MF_DEVICE(MF_DEVICE_CPU, 0));
    ck_assert(a->time_ns <= b->time_ns);
    ck_assert_uint_eq(log->header.pid, (uint64_t)getpid());
    ck_assert_uint_eq(log->header.flags & MF_HEADER_FINISHED, MF_HEADER_FINISHED);
    ck_assert_int_eq(log->damaged, 0);
    char name[16];
    ck_assert_str_eq(mf_device_name(a->device, name, sizeof name), "gpu/1");
    ck_assert_ptr_nonnull(mf_log_thread_name(log, a->tid));
    mf_log_free(log);
}
END_TEST

static void *record_many(void *arg)
{
    long base = (long)arg;
    char scope[16];
    snprintf(scope, sizeof scope, "w%ld", base);
    memflow_scope_push(scope, 0);
    for (long i = 0; i < 50000; i++)
        memflow_record_alloc("cpu/0", (void *)(base << 32 | (uintptr_t)i * 16), 16, 16, NULL, 0);
    memflow_scope_pop();
    return NULL;
}

START_TEST(record_threads_exact_and_spanning_chunks)
{
    use_scratch("threads");
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, record_many, (void *)(i + 1));
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    mf_recorder_finish();
    mf_log *log = read_own_log();
    /* 50000 x 56-byte records per thread need 3 chunks each */
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 200000);
    size_t per[5] = { 0 };
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_ALLOC) {
            const char *s = mf_log_string(log, e->alloc.scope);
            ck_assert(s[0] == 'w' && s[1] >= '1' && s[1] <= '4');
            per[s[1] - '0']++;
            ck_assert_uint_eq(e->alloc.addr >> 32, (uint64_t)(s[1] - '0'));
        }
        if (i > 0)
            ck_assert(log->events[i - 1].time_ns <= e->time_ns);
    }
    for (int i = 1; i <= 4; i++)
        ck_assert_uint_eq(per[i], 50000);
    mf_log_free(log);
}
END_TEST

START_TEST(sample_rate_writes_snapshots)
{
    use_scratch("samples");
    const char *k = "sample_rate", *v = "10";
    memflow_set_config(1, &k, &v);
    memflow_set_state(MEMFLOW_RUN);
    for (int i = 0; i < 35; i++)
        memflow_record_alloc("gpu/0", (void *)(uintptr_t)(0x1000 + i * 64), 64, 64, NULL, 0);
    for (int i = 0; i < 5; i++)
        memflow_record_free("gpu/0", (void *)(uintptr_t)(0x1000 + i * 64));
    mf_recorder_finish();
    mf_log *log = read_own_log();
    ck_assert_uint_eq(count_type(log, MF_REC_SAMPLE), 4); /* events 10, 20, 30, 40 */
    ck_assert_uint_eq(log->n_samples, 4);
    ck_assert_uint_eq(nth_of_type(log, MF_REC_SAMPLE, 0)->device, MF_DEVICE(MF_DEVICE_GPU, 0));
    mf_log_free(log);
}
END_TEST

START_TEST(unwritable_path_is_reported)
{
    const char *k = "path", *v = "/proc/memflow-cannot-be-here";
    memflow_set_config(1, &k, &v);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), -1);
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "/proc/memflow-cannot-be-here"));
}
END_TEST

/* ---- damaged logs ------------------------------------------------------ */

/* Record 3000 allocations and return the log's path (in scratch). */
static const char *make_log(const char *name)
{
    use_scratch(name);
    memflow_set_state(MEMFLOW_RUN);
    for (int i = 0; i < 3000; i++)
        memflow_record_alloc("cpu/0", (void *)(uintptr_t)(0x10000 + i * 32), 32, 32, NULL, 0);
    mf_recorder_finish();
    return mf_recorder_log_path();
}

/* Offset of the first ALLOC record: chunk 1 header, then string/thread records. */
static long first_alloc_offset(const char *path)
{
    FILE *f = fopen(path, "rb");
    long at = MF_CHUNK_SIZE + (long)sizeof(mf_chunk_header);
    for (;;) {
        uint64_t word;
        fseek(f, at, SEEK_SET);
        ck_assert_int_eq(fread(&word, 8, 1, f), 1);
        if (MF_WORD_TYPE(word) == MF_REC_ALLOC)
            break;
        at += MF_WORD_SIZE(word);
    }
    fclose(f);
    return at;
}

START_TEST(truncated_log_keeps_what_came_before)
{
    const char *path = make_log("truncated");
    long first = first_alloc_offset(path);
    long cut = first + 1000 * (long)sizeof(mf_rec_alloc) + 20; /* inside record 1001 */
    ck_assert_int_eq(truncate(path, cut), 0);
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), 1);
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 1000);
    char want[4200];
    snprintf(want, sizeof want, "%s: offset %ld: file truncated inside a record of type 1",
             path, first + 1000 * (long)sizeof(mf_rec_alloc));
    ck_assert_str_eq(log->damage, want);
    mf_log_free(log);
}
END_TEST

START_TEST(corrupt_record_keeps_what_came_before)
{
    const char *path = make_log("corrupt");
    long at = first_alloc_offset(path) + 2000 * (long)sizeof(mf_rec_alloc);
    int fd = open(path, O_WRONLY);
    uint64_t garbage = MF_RECORD_WORD(77, 56, 0);
    ck_assert_int_eq(pwrite(fd, &garbage, 8, at), 8);
    close(fd);
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), 1);
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 2000);
    ck_assert_ptr_nonnull(strstr(log->damage, "unknown record type 77"));
    char off[64];
    snprintf(off, sizeof off, "offset %ld:", at);
    ck_assert_ptr_nonnull(strstr(log->damage, off));
    mf_log_free(log);
}
END_TEST

START_TEST(unreadable_files_are_errors)
{
    mf_log *log = (mf_log *)1;
    char err[512];
    use_scratch("unreadable");
    mkdir(scratch, 0777);
    char path[4200];
    ck_assert_int_eq(mf_log_read("/nonexistent/x.mfl", &log, err, sizeof err), -1);
    ck_assert_ptr_null(log);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.mfl: cannot open"));
    snprintf(path, sizeof path, "%s/text.mfl", scratch);
    FILE *f = fopen(path, "w");
    fputs("this is not a log at all, just some words\n", f);
    fclose(f);
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not a memflow log"));
    snprintf(path, sizeof path, "%s/empty.mfl", scratch);
    fclose(fopen(path, "w"));
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "empty file"));
}
END_TEST

START_TEST(future_version_is_refused)
{
    const char *path = make_log("version");
    int fd = open(path, O_WRONLY);
    uint32_t v = 99;
    ck_assert_int_eq(pwrite(fd, &v, 4, 8), 4);
    close(fd);
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "log version 99, this memflow reads version 2"));
}
END_TEST

/* The CPU hot path writes compact records; what they cannot hold goes into
 * full ones; both decode to the same events. */
START_TEST(compact_cpu_records_roundtrip)
{
    use_scratch("compact");
    memflow_set_state(MEMFLOW_RUN);
    memflow_scope_push("hot", 0);
    mf_recorder_cpu_alloc((void *)0x7f0000000010, 24, 32, 0);
    mf_recorder_cpu_alloc((void *)0x7f0000000100, (size_t)1 << 50, ((size_t)1 << 50) + 4096,
                          0);                                   /* too big: full record */
    mf_recorder_cpu_free((void *)0x7f0000000010, MF_FLAG_REALLOC);
    mf_recorder_cpu_alloc((void *)0x7f0000000020, 100, 112, MF_FLAG_REALLOC);
    mf_recorder_cpu_free((void *)0x7f0000000100, 0);
    memflow_scope_pop();
    mf_recorder_finish();
    mf_log *log = read_own_log();
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 3);
    ck_assert_uint_eq(count_type(log, MF_REC_FREE), 2);
    const mf_event *a0 = nth_of_type(log, MF_REC_ALLOC, 0);
    const mf_event *a1 = nth_of_type(log, MF_REC_ALLOC, 1);
    const mf_event *a2 = nth_of_type(log, MF_REC_ALLOC, 2);
    const mf_event *f0 = nth_of_type(log, MF_REC_FREE, 0);
    ck_assert_uint_eq(a0->alloc.addr, 0x7f0000000010);
    ck_assert_uint_eq(a0->alloc.requested, 24);
    ck_assert_uint_eq(a0->alloc.actual, 32);
    ck_assert_str_eq(mf_log_string(log, a0->alloc.scope), "hot:");
    ck_assert_uint_eq(a1->alloc.requested, (uint64_t)1 << 50);
    ck_assert_uint_eq(a1->alloc.actual, ((uint64_t)1 << 50) + 4096);
    ck_assert_str_eq(mf_log_string(log, a1->alloc.scope), "hot:");
    ck_assert_uint_eq(f0->free.addr, 0x7f0000000010);
    ck_assert_uint_eq(f0->free.flags & MF_FLAG_REALLOC, MF_FLAG_REALLOC);
    ck_assert_uint_eq(a2->alloc.flags & MF_FLAG_REALLOC, MF_FLAG_REALLOC);
    ck_assert_uint_eq(a2->alloc.actual, 112);
    ck_assert(a0->time_ns <= f0->time_ns && f0->time_ns <= a2->time_ns);
    ck_assert_uint_eq(a0->tid, (uint32_t)gettid());
    ck_assert_uint_eq(a0->device, 0);
    mf_log_free(log);
}
END_TEST

START_TEST(compact_record_without_time_base_is_damage)
{
    use_scratch("notimebase");
    memflow_set_state(MEMFLOW_RUN);
    for (int i = 0; i < 10; i++)
        mf_recorder_cpu_alloc((void *)(uintptr_t)(0x7f0000000000 + i * 64), 64, 64, 0);
    mf_recorder_finish();
    const char *path = mf_recorder_log_path();
    /* find the TIME record and turn it into an unused STATE-sized gap */
    FILE *f = fopen(path, "r+b");
    long at = MF_CHUNK_SIZE + (long)sizeof(mf_chunk_header), time_at = -1;
    for (;;) {
        uint64_t word;
        fseek(f, at, SEEK_SET);
        ck_assert_int_eq(fread(&word, 8, 1, f), 1);
        if (MF_WORD_TYPE(word) == MF_REC_TIME) {
            time_at = at;
            break;
        }
        at += MF_WORD_SIZE(word);
    }
    uint64_t state = MF_RECORD_WORD(MF_REC_STATE, sizeof(mf_rec_state), MF_STATE_RUN);
    fseek(f, time_at, SEEK_SET);
    fwrite(&state, 8, 1, f);
    fclose(f);
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(path, &log, err, sizeof err), 1);
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 0);
    char want[128];
    snprintf(want, sizeof want, "offset %ld: compact record type 12 before any TIME record",
             time_at + 16);
    ck_assert_msg(strstr(log->damage, want) != NULL, "%s", log->damage);
    mf_log_free(log);
}
END_TEST

/* Record n compact allocations at 0x7f0000000000 + 64 i into a log in
 * folder name that may grow to `chunks` chunks (RLIMIT_FSIZE; a full disk
 * alike).  The limit stays set. */
static void record_into_a_full_log(const char *name, unsigned chunks, uintptr_t n)
{
    use_scratch(name);
    memflow_set_state(MEMFLOW_RUN);
    struct rlimit small = { chunks * MF_CHUNK_SIZE, RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    for (uintptr_t i = 0; i < n; i++)
        mf_recorder_cpu_alloc((void *)(0x7f0000000000 + i * 64), 64, 64, 0);
}

static void lift_file_size_limit(void)
{
    struct rlimit big = { RLIM_INFINITY, RLIM_INFINITY };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &big), 0);
}

/* A log that cannot grow keeps everything written before, and every reader
 * says events were lost.  No SIGXFSZ reaches the process (the test does not
 * ignore it). */
START_TEST(full_disk_drops_are_reported)
{
    record_into_a_full_log("fulldisk", 3, 200000);
    lift_file_size_limit();
    mf_recorder_finish();
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(mf_recorder_log_path(), &log, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(log->damage, "offset 20: the recorder could not grow the log"));
    ck_assert_ptr_nonnull(strstr(log->damage, "events were dropped"));
    /* what was kept is exactly the first allocations, in order, none lost between */
    size_t kept = 0;
    for (size_t i = 0; i < log->n_events; i++)
        if (log->events[i].type == MF_REC_ALLOC)
            ck_assert_uint_eq(log->events[i].alloc.addr, 0x7f0000000000 + kept++ * 64);
    ck_assert_uint_gt(kept, 30000);
    ck_assert_uint_lt(kept, 200000);
    /* every event is kept or counted: the header says how many were dropped */
    ck_assert_uint_eq(log->header.dropped_events, 200000 - kept);
    mf_log_free(log);
}
END_TEST

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* While the log cannot grow, the writer backs off: a million dropped events
 * cost a few hundred tries to grow the file, not a million.  (The writer also
 * retries on time, at most about once a second: the bound allows for a slow
 * machine instead of timing anything.) */
START_TEST(full_disk_backs_off)
{
    double start = seconds_now();
    record_into_a_full_log("backoff", 2, 1000000);
    double elapsed = seconds_now() - start;
    mf_log_writer_stats st;
    mf_log_writer_get_stats(&st);
    ck_assert_uint_gt(st.dropped_events, 900000);
    /* 13 tries until the backoff is at its longest, then one per 4096 drops */
    ck_assert_msg(st.failed_claims <= 13 + st.dropped_events / 4096 + 2 * (uint64_t)elapsed + 2,
                  "%llu tries to grow a full log for %llu dropped events in %.1f s",
                  (unsigned long long)st.failed_claims,
                  (unsigned long long)st.dropped_events, elapsed);
}
END_TEST

/* Space that comes back mid-run (the limit is raised) gives a dense log:
 * failed claims burnt no chunk numbers, so the file has no holes and every
 * event after the space came back is in it. */
START_TEST(full_disk_then_space_gives_a_dense_log)
{
    record_into_a_full_log("dense", 3, 300000);
    lift_file_size_limit();
    /* The writer retries after 4096 dropped events at the latest. */
    for (uintptr_t i = 0; i < 4096; i++)
        mf_recorder_cpu_free((void *)(0x7e0000000000 + i * 64), 0);
    for (uintptr_t i = 0; i < 100000; i++)
        mf_recorder_cpu_alloc((void *)(0x7d0000000000 + i * 64), 64, 64, 0);
    mf_recorder_finish();
    struct stat st;
    ck_assert_int_eq(stat(mf_recorder_log_path(), &st), 0);
    mf_log *log;
    char err[512];
    ck_assert_int_eq(mf_log_read(mf_recorder_log_path(), &log, err, sizeof err), 1);
    ck_assert_uint_le(log->header.chunks_claimed, 12);
    ck_assert_uint_eq((uint64_t)st.st_size, log->header.chunks_claimed * MF_CHUNK_SIZE);
    ck_assert_uint_ge((uint64_t)st.st_blocks * 512, (uint64_t)st.st_size);
    size_t late = 0;
    for (size_t i = 0; i < log->n_events; i++)
        late += log->events[i].type == MF_REC_ALLOC &&
                log->events[i].alloc.addr >= 0x7d0000000000 &&
                log->events[i].alloc.addr < 0x7e0000000000;
    ck_assert_uint_eq(late, 100000);
    mf_log_free(log);
}
END_TEST

/* ---- the staging area (runtime/stage.h, cli/stage_drain.h) --------------
 * The test process plays both parts: the program whose chunks are staged,
 * and memflow run copying them (a drain thread, as cli/run_stage.c has). */

static mf_stage *test_stage;
static char test_stage_path[4200];
static int drain_stop;

/* A stage handed to this very process, as memflow run hands one to the
 * process it starts. */
static void use_stage(const char *name)
{
    char env[128], err[512];
    use_scratch(name);
    ck_assert_int_eq(mkdir(scratch, 0700), 0);
    uint8_t run_id[MF_RUN_ID_BYTES];
    char hex[MF_RUN_ID_HEX];
    mf_run_id_fresh(run_id);
    mf_run_id_format(run_id, hex);
    snprintf(test_stage_path, sizeof test_stage_path, "%s/memflow-%s.stage", scratch, hex);
    test_stage = mf_stage_create(scratch, run_id, env, sizeof env, err, sizeof err);
    ck_assert_msg(test_stage != NULL, "%s", err);
    setenv("MEMFLOW_STAGE", env, 1);
    mf_stage_child_owns(test_stage);
}

static void *drain_loop(void *arg)
{
    (void)arg;
    char err[512];
    int failed = 0;
    while (!__atomic_load_n(&drain_stop, __ATOMIC_ACQUIRE)) {
        failed += mf_stage_drain(test_stage, 0, err, sizeof err) < 0;
        mf_stage_wait(test_stage, 1000);
    }
    ck_assert_msg(!failed, "drain: %s", err);
    return NULL;
}

/* The program is gone: the last drain, as memflow run's. */
static void final_drain(void)
{
    char err[512];
    ck_assert_int_ge(mf_stage_drain(test_stage, 1, err, sizeof err), 0);
    mf_stage_destroy(test_stage);
}

/* A staged run as memflow run makes one: recording, a drain thread, the
 * threads running fn(k) for k in 1..threads, the end, the last drain; the
 * log writer's counters in *st. */
static void record_staged(const char *name, int threads, void *(*fn)(void *),
                          mf_log_writer_stats *st)
{
    use_stage(name);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    pthread_t drainer, t[64];
    pthread_create(&drainer, NULL, drain_loop, NULL);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, fn, (void *)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    mf_recorder_finish();
    __atomic_store_n(&drain_stop, 1, __ATOMIC_RELEASE);
    mf_stage_wake(test_stage);
    pthread_join(drainer, NULL);
    final_drain();
    mf_log_writer_get_stats(st);
}

static void *record_compact(void *arg)
{
    uintptr_t base = (uintptr_t)arg << 36;
    for (uintptr_t i = 0; i < 300000; i++) {
        mf_recorder_cpu_alloc((void *)(base + i * 16), 16, 16, 0);
        mf_recorder_cpu_free((void *)(base + i * 16), 0);
    }
    return NULL;
}

/* Every address of record_compact(k) for k in 1..threads, once allocated
 * and once freed, in order within each thread, times in order.  (One
 * assertion at the end: Check notes every assertion that passes.) */
static void check_compact_records(const mf_log *log, int threads)
{
    uintptr_t next_alloc[64] = { 0 }, next_free[64] = { 0 };
    size_t out_of_order = 0, unexpected = 0;
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        out_of_order += i > 0 && log->events[i - 1].time_ns > e->time_ns;
        if (e->type != MF_REC_ALLOC && e->type != MF_REC_FREE)
            continue;
        uint64_t addr = e->type == MF_REC_ALLOC ? e->alloc.addr : e->free.addr;
        unsigned k = (unsigned)(addr >> 36);
        if (k < 1 || k > (unsigned)threads)
            continue;
        uintptr_t at = (addr & (((uintptr_t)1 << 36) - 1)) / 16;
        if (e->type == MF_REC_ALLOC)
            unexpected += at != next_alloc[k]++;
        else if (e->type == MF_REC_FREE)
            unexpected += at != next_free[k]++;
    }
    size_t missing = 0;
    for (int k = 1; k <= threads; k++)
        missing += (next_alloc[k] != 300000) + (next_free[k] != 300000);
    ck_assert_msg(!out_of_order && !unexpected && !missing,
                  "%zu times out of order, %zu unexpected events, %zu threads short",
                  out_of_order, unexpected, missing);
}

/* This process's log: undamaged, and check_compact_records. */
static void check_own_log(int threads)
{
    mf_log *log = read_own_log();
    ck_assert_int_eq(log->damaged, 0);
    check_compact_records(log, threads);
    mf_log_free(log);
}

/* Four threads, 2.4 M events: more chunks (about 60) than slots (32), so
 * slots are reused without being cleared; every record reaches the log
 * through the stage, and nothing of a slot's older chunk does. */
START_TEST(stage_every_record_reaches_the_log)
{
    mf_log_writer_stats st;
    record_staged("stage", 4, record_compact, &st);
    ck_assert_uint_gt(st.claims, 50);
    ck_assert_uint_eq(st.staged_claims, st.claims);
    check_own_log(4);
}
END_TEST

/*
 * What the stage holds and has not written is recorded no earlier than its
 * first event: a slot's first chunk (sequence 0) was taken for one written
 * while filling at time 0, so the analysis during the run fed nothing until
 * every slot had been used once (a 4M-event churn: nothing before its exit).
 */
START_TEST(stage_unwritten_since_a_first_chunk)
{
    use_stage("stage-since");
    uint64_t before = mf_clock_now();
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    for (uintptr_t i = 0; i < 100; i++)
        mf_recorder_cpu_alloc((void *)(0x10000 + i * 16), 16, 16, 0);
    uint64_t now = mf_clock_now();
    uint64_t since = mf_stage_unwritten_since(test_stage, now);
    ck_assert_uint_ge(since, before);
    ck_assert_uint_le(since, now);
    mf_recorder_finish();
    final_drain();
}
END_TEST

/* memflow run gone (nobody drains: the stage's memflow run is not this
 * process's parent): the program writes every full slot itself, and at the
 * end (mf_recorder_finish) what it still holds. */
START_TEST(stage_without_memflow_run_the_program_writes)
{
    use_stage("stage-alone");
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    record_compact((void *)1);
    mf_recorder_finish();
    mf_log_writer_stats st;
    mf_log_writer_get_stats(&st);
    ck_assert_uint_eq(st.staged_claims, st.claims);
    check_own_log(1);
}
END_TEST

/* memflow run and the program killed together: the program (a child that
 * records 600,000 events, staged, nobody draining, then SIGKILLs itself)
 * and memflow run (this process, whose handle goes without its final
 * drain).  While memflow run holds the stage a reader leaves it alone;
 * then mf_stage_recover writes every staged chunk into the child's log,
 * which then holds every record, and removes the stage file. */
START_TEST(stage_killed_run_is_recovered)
{
    use_stage("stage-killed");
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        mf_stage_child_owns(test_stage);
        memflow_set_state(MEMFLOW_RUN);
        record_compact((void *)1);
        raise(SIGKILL);
    }
    int status;
    ck_assert_int_eq(waitpid(child, &status, 0), child);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    char msg[8192], log_path[4400];
    snprintf(log_path, sizeof log_path, "%s/memflow-%d.mfl", scratch, (int)child);
    ck_assert_int_eq(mf_stage_recover(test_stage_path, msg, sizeof msg), 0);
    ck_assert_int_eq(access(test_stage_path, F_OK), 0); /* memflow run still holds it */
    mf_stage_destroy(test_stage);                      /* memflow run killed */
    ck_assert_int_eq(access(test_stage_path, F_OK), 0);
    int chunks = mf_stage_recover(test_stage_path, msg, sizeof msg);
    ck_assert_msg(chunks > 0, "%s", msg);
    ck_assert_ptr_nonnull(strstr(msg, log_path));
    ck_assert_int_eq(access(test_stage_path, F_OK), -1);
    mf_log *log;
    ck_assert_int_eq(mf_log_read(log_path, &log, msg, sizeof msg), 0);
    check_compact_records(log, 1);
    mf_log_free(log);
}
END_TEST

static pthread_barrier_t all_hold_a_chunk;

static void *hold_a_chunk(void *arg)
{
    uintptr_t base = (uintptr_t)arg << 36;
    mf_recorder_cpu_alloc((void *)base, 16, 16, 0);
    mf_recorder_cpu_free((void *)base, 0);
    pthread_barrier_wait(&all_hold_a_chunk);
    for (uintptr_t i = 1; i < 300000; i++) {
        mf_recorder_cpu_alloc((void *)(base + i * 16), 16, 16, 0);
        mf_recorder_cpu_free((void *)(base + i * 16), 0);
    }
    return NULL;
}

/* 40 threads hold a chunk at once, more than the 32 slots: the threads
 * that find none map their chunk of the file directly; every record is
 * kept either way. */
START_TEST(stage_more_threads_than_slots)
{
    enum { THREADS = 40 };
    pthread_barrier_init(&all_hold_a_chunk, NULL, THREADS);
    mf_log_writer_stats st;
    record_staged("stage-threads", THREADS, hold_a_chunk, &st);
    ck_assert_uint_ge(st.claims - st.staged_claims, THREADS - MF_STAGE_SLOTS);
    ck_assert_uint_gt(st.staged_claims, 0);
    check_own_log(THREADS);
}
END_TEST

/*
 * memflow run writes what an idle slot recorded past what the log already
 * holds of its chunk.  If the slot moved on to another chunk since memflow
 * run learned how much that was (its sequence moved), nothing is written:
 * before, the copy checked only that the sequence did not move during the
 * copy itself, so the new chunk's bytes could be written from the old
 * chunk's offset (with all 32 slots taken, where the program writes a slot
 * itself).  A slot of chunk 3 holding two 16-byte records after its header,
 * sequence 7.
 */
START_TEST(stage_snapshot_of_a_slot_that_moved_on)
{
    stage_header *h = calloc(1, mf_stage_area_bytes());
    char *scratch_chunk = malloc(MF_CHUNK_SIZE);
    ck_assert_ptr_nonnull(h);
    ck_assert_ptr_nonnull(scratch_chunk);
    char *image = mf_stage_slot_base(h, 0);
    mf_chunk_header ch = { MF_CHUNK_MAGIC, 3, 42, 0 };
    memcpy(image, &ch, sizeof ch);
    uint64_t word = MF_REC_FREE | (uint64_t)16 << 16;
    for (int r = 0; r < 2; r++) {
        memcpy(image + sizeof ch + 16 * r, &word, sizeof word);
        memset(image + sizeof ch + 16 * r + 8, 0xa0 + r, 8);
    }
    h->state[0] = SLOT_FILLING;
    h->seq[0] = 7;
    char path[4200];
    snprintf(path, sizeof path, "%s/snapshot-moved.log", scratch);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    size_t end = 0;
    ck_assert_int_eq(mf_stage_write_snapshot_from(h, 0, fd, scratch_chunk, sizeof ch, 6, &end), 0);
    ck_assert_uint_eq(end, sizeof ch);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(st.st_size, 0);
    ck_assert_int_eq(mf_stage_write_snapshot_from(h, 0, fd, scratch_chunk, sizeof ch, 7, &end), 1);
    ck_assert_uint_eq(end, sizeof ch + 32);
    char back[32];
    ck_assert_int_eq(pread(fd, back, sizeof back, 3 * (off_t)MF_CHUNK_SIZE + (off_t)sizeof ch), 32);
    ck_assert_mem_eq(back, image + sizeof ch, 32);
    close(fd);
    unlink(path);
    free(scratch_chunk);
    free(h);
}
END_TEST

/* mf_log_writer_flush mid-run (memflow_dump's first step) puts every record
 * made so far into the file, though its slot is not full. */
START_TEST(stage_flush_writes_what_is_staged)
{
    use_stage("stage-flush");
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
    for (uintptr_t i = 0; i < 1000; i++)
        mf_recorder_cpu_alloc((void *)(0x7f0000000000 + i * 64), 64, 64, 0);
    mf_log *log = read_own_log();
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 0); /* all staged yet */
    mf_log_free(log);
    mf_log_writer_flush();
    log = read_own_log();
    ck_assert_uint_eq(count_type(log, MF_REC_ALLOC), 1000);
    ck_assert_uint_eq(nth_of_type(log, MF_REC_ALLOC, 999)->alloc.addr,
                      0x7f0000000000 + 999 * 64);
    mf_log_free(log);
}
END_TEST

/* The standard CRC-32C check value, in one piece and continued in two. */
START_TEST(crc32c_check_value)
{
    ck_assert_uint_eq(mf_crc32c(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(mf_crc32c(mf_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
    ck_assert_uint_eq(mf_crc32c(0, "", 0), 0u);
}
END_TEST

START_TEST(device_names)
{
    uint16_t d;
    ck_assert_int_eq(mf_device_parse("cpu/0", &d), 0);
    ck_assert_uint_eq(d, 0);
    ck_assert_int_eq(mf_device_parse("gpu/7", &d), 0);
    ck_assert_uint_eq(d, 0x107);
    ck_assert_int_eq(mf_device_parse("gpu/255", &d), 0);
    static const char *const bad[] = { "cpu/1", "gpu/", "gpu/256", "gpu/1x", "GPU/0", "", "gpu/-1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(mf_device_parse(bad[i], &d) == -1, "%s accepted", bad[i]);
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *c = tcase_create("config");
    tcase_add_test(c, config_unknown_key_names_key_and_accepted);
    tcase_add_test(c, config_bad_values);
    tcase_add_test(c, config_good_values);
    tcase_add_test(c, config_from_environment);
    tcase_add_test(c, config_unknown_variable_is_reported);
    suite_add_tcase(s, c);
    c = tcase_create("scope");
    tcase_add_test(c, scope_mxnet_rules);
    tcase_add_test(c, scope_is_per_thread);
    tcase_add_test(c, scope_overflow_is_an_error_and_balanced);
    suite_add_tcase(s, c);
    c = tcase_create("recorder");
    tcase_add_test(c, record_roundtrip_exact);
    tcase_add_test(c, record_threads_exact_and_spanning_chunks);
    tcase_add_test(c, sample_rate_writes_snapshots);
    tcase_add_test(c, unwritable_path_is_reported);
    tcase_add_test(c, device_names);
    tcase_add_test(c, crc32c_check_value);
    tcase_add_test(c, compact_cpu_records_roundtrip);
    tcase_add_test(c, compact_record_without_time_base_is_damage);
    tcase_add_test(c, full_disk_drops_are_reported);
    tcase_add_test(c, full_disk_backs_off);
    tcase_add_test(c, full_disk_then_space_gives_a_dense_log);
    suite_add_tcase(s, c);
    c = tcase_create("stage");
    tcase_add_test(c, stage_every_record_reaches_the_log);
    tcase_add_test(c, stage_unwritten_since_a_first_chunk);
    tcase_add_test(c, stage_killed_run_is_recovered);
    tcase_add_test(c, stage_without_memflow_run_the_program_writes);
    tcase_add_test(c, stage_more_threads_than_slots);
    tcase_add_test(c, stage_flush_writes_what_is_staged);
    tcase_add_test(c, stage_snapshot_of_a_slot_that_moved_on);
    suite_add_tcase(s, c);

    c = tcase_create("reader");
    tcase_add_test(c, truncated_log_keeps_what_came_before);
    tcase_add_test(c, corrupt_record_keeps_what_came_before);
    tcase_add_test(c, unreadable_files_are_errors);
    tcase_add_test(c, future_version_is_refused);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(core_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
