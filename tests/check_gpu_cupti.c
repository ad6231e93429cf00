/*
 * check_gpu_cupti.c - how GPU capture deals with CUPTI's answers that this
 * driver-less machine cannot give: CUPTI that works, CUPTI already held by
 * another tool, a libcupti of another version.
 *
 * Without a driver the real libcupti refuses cuptiSubscribe_v2 and every
 * registration (CUPTI_ERROR_UNKNOWN), so these answers are given at link
 * time: the test is linked with --wrap for the CUPTI calls memflow_gpu_start
 * makes, and each __wrap_ function records the call, then either answers as
 * the test asks (the situation under test) or passes it on to the real
 * libcupti (__real_).  Everything else - the plugin's start-up order, the
 * recorder, the log, memflow_dumps and the process's exit handlers - is the
 * production code.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "cuda_seen.h"
#include "gpu.h"
#include "gpu_test_log.h"
#include "log_in_memory.h"
#include "memflow.h"

/* ---- the wrapped CUPTI calls -------------------------------------------- */

CUptiResult __real_cuptiGetVersion(uint32_t *version);
CUptiResult __real_cuptiActivityFlushAll(uint32_t flag);
CUptiResult __wrap_cuptiGetVersion(uint32_t *version);
CUptiResult __wrap_cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata,
                                     CUpti_SubscriberParams *params);
CUptiResult __wrap_cuptiUnsubscribe(CUpti_SubscriberHandle subscriber);
CUptiResult __wrap_cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
CUptiResult __wrap_cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn);
CUptiResult __wrap_cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                  CUpti_BuffersCallbackCompleteFunc completed);
CUptiResult __wrap_cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult __wrap_cuptiActivityEnableAndDump(CUpti_ActivityKind kind);
CUptiResult __wrap_cuptiActivityEnableAllocationSource(uint8_t enable);
CUptiResult __wrap_cuptiActivityFlushAll(uint32_t flag);

static uint32_t fake_version;          /* 0: the real libcupti's */
static int cupti_works;                /* answer registrations with success */
static CUptiResult subscribe_answer = CUPTI_SUCCESS;
static const char *holder_name = "";
static int subscribed, registered, timestamp_registered, enabled_callbacks;
static CUpti_ActivityKind enabled_kinds[32];
static int n_enabled_kinds;
static int flush_fd = -1;              /* where the flush flags go, in order */

CUptiResult __wrap_cuptiGetVersion(uint32_t *version)
{
    if (!fake_version)
        return __real_cuptiGetVersion(version);
    *version = fake_version;
    return CUPTI_SUCCESS;
}

CUptiResult __wrap_cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata,
                                     CUpti_SubscriberParams *params)
{
    (void)callback, (void)userdata;
    subscribed++;
    *subscriber = NULL;
    if (subscribe_answer == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && params &&
        params->oldSubscriberName)
        snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s", holder_name);
    return cupti_works ? subscribe_answer : CUPTI_ERROR_UNKNOWN;
}

CUptiResult __wrap_cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    subscribed--;
    return CUPTI_SUCCESS;
}

CUptiResult __wrap_cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)enable, (void)subscriber, (void)domain, (void)cbid;
    enabled_callbacks++;
    return cupti_works ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}

CUptiResult __wrap_cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
    (void)fn;
    timestamp_registered++;
    return cupti_works ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}

CUptiResult __wrap_cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                  CUpti_BuffersCallbackCompleteFunc completed)
{
    (void)requested, (void)completed;
    registered++;
    return cupti_works ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}

static CUptiResult enable_kind(CUpti_ActivityKind kind)
{
    if (n_enabled_kinds < 32)
        enabled_kinds[n_enabled_kinds++] = kind;
    return cupti_works ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}

CUptiResult __wrap_cuptiActivityEnable(CUpti_ActivityKind kind)
{
    return enable_kind(kind);
}

CUptiResult __wrap_cuptiActivityEnableAndDump(CUpti_ActivityKind kind)
{
    return enable_kind(kind);
}

CUptiResult __wrap_cuptiActivityEnableAllocationSource(uint8_t enable)
{
    (void)enable;
    return cupti_works ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
}

/* A spy only: the flag goes to flush_fd, the call to the real libcupti. */
CUptiResult __wrap_cuptiActivityFlushAll(uint32_t flag)
{
    if (flush_fd >= 0) {
        char c = flag == CUPTI_ACTIVITY_FLAG_FLUSH_FORCED ? 'F' : flag == 0 ? '0' : '?';
        if (write(flush_fd, &c, 1) != 1)
            abort();
    }
    return __real_cuptiActivityFlushAll(flag);
}

static int kind_enabled(CUpti_ActivityKind kind)
{
    for (int i = 0; i < n_enabled_kinds; i++)
        if (enabled_kinds[i] == kind)
            return 1;
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

static void start_log(const char *name)
{
    gpu_test_start_log("check_gpu_cupti", name, NULL);
}

static void start_gpu(void *arg)
{
    (void)arg;
    ck_assert_int_eq(memflow_gpu_start(), 0);
}

/* memflow_gpu_start(); what it wrote on stderr. */
static const char *start_gpu_capturing_stderr(void)
{
    return gpu_test_capture_stderr(start_gpu, NULL);
}

/* ---- tests ---------------------------------------------------------------- */

/*
 * Flush without loss: with CUPTI working, every mid-run flush (memflow_dumps,
 * memflow_dump, memflow_dump(1)) asks only for complete buffers (flag 0);
 * the forced flush comes once, from the exit handler, after a plain one;
 * then the recorder's own exit flush.  Run in a child so its real exit
 * handlers run.
 */
START_TEST(only_the_exit_flush_is_forced)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        flush_fd = fds[1];
        cupti_works = 1;
        start_log("flush");
        start_gpu_capturing_stderr();
        if (!memflow_gpu_active())
            _exit(3);
        if (!memflow_dumps(0, "table", "total", 0))
            _exit(4);
        if (write(flush_fd, "|", 1) != 1 || memflow_dump(0) != 0)
            _exit(5);
        if (write(flush_fd, "|", 1) != 1)
            _exit(6);
        exit(0); /* the exit handlers flush once more */
    }
    close(fds[1]);
    char flags[64];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof flags - 1 && (got = read(fds[0], flags + n, sizeof flags - 1 - n)) > 0)
        n += (size_t)got;
    flags[n] = '\0';
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    /* dumps | dump | exit: plain, forced, then the recorder's final hook */
    ck_assert_str_eq(flags, "0|0|0F0");
}
END_TEST

/*
 * Another tool (Nsight Systems, torch.profiler/Kineto) already holds CUPTI:
 * memflow says so in one line naming it, notes it, and registers nothing -
 * no timestamp callback, no activity buffers, no kinds, no API callbacks -
 * so the other tool keeps its own.
 */
START_TEST(another_cupti_client_is_left_alone)
{
    cupti_works = 1;
    subscribe_answer = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    holder_name = "CUPTI for Nsight Systems";
    start_log("busy");
    const char *err = start_gpu_capturing_stderr();
    ck_assert_str_eq(err, "memflow: GPU capture is off: another CUPTI client holds CUPTI "
                          "(CUPTI for Nsight Systems; Nsight Systems, torch.profiler/Kineto ... "
                          "allow one before CUDA 13.2); memflow leaves its callbacks alone; "
                          "CPU capture goes on\n");
    ck_assert_int_eq(subscribed, 1);
    ck_assert_int_eq(timestamp_registered, 0);
    ck_assert_int_eq(registered, 0);
    ck_assert_int_eq(n_enabled_kinds, 0);
    ck_assert_int_eq(enabled_callbacks, 0);
    ck_assert_int_eq(memflow_gpu_active(), 0);
    ck_assert_int_eq(mf_cuda_capture_on(), 0);
    mf_log *log = gpu_test_finish_and_read();
    uint64_t value = 0;
    ck_assert_uint_eq(gpu_test_notes(log, MF_NOTE_GPU_CUPTI_BUSY, &value), 1);
    ck_assert_uint_eq(value, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    ck_assert_uint_eq(gpu_test_notes(log, MF_NOTE_GPU_OFF, &value), 0);
    mf_log_free(log);
}
END_TEST

/*
 * cupti=0 (`memflow run --set cupti=0` injects no plugin; this is the plugin
 * injected by hand): one line, and CUPTI is left untouched for the
 * program's own tools (torch.profiler's CUDA activities).
 */
START_TEST(cupti_key_off_leaves_cupti_alone)
{
    cupti_works = 1;
    const char *k[] = { "cupti" }, *v[] = { "0" };
    ck_assert_int_eq(memflow_set_config(1, k, v), 0);
    start_log("cupti_off");
    const char *err = start_gpu_capturing_stderr();
    ck_assert_str_eq(err, "memflow: GPU capture through CUPTI is off (cupti=0): CUPTI is left "
                          "to other tools; CPU capture goes on\n");
    ck_assert_int_eq(subscribed, 0);
    ck_assert_int_eq(timestamp_registered, 0);
    ck_assert_int_eq(registered, 0);
    ck_assert_int_eq(n_enabled_kinds, 0);
    ck_assert_int_eq(mf_cuda_capture_on(), 0);
    mf_recorder_finish();
}
END_TEST

/* With CUPTI working: subscribe first, then everything, and every kind. */
START_TEST(working_cupti_gets_every_kind)
{
    cupti_works = 1;
    start_log("works");
    const char *err = start_gpu_capturing_stderr();
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(memflow_gpu_active(), 1);
    /* the runtime knows too: the Python extension asks it (the driver loads
     * the plugin RTLD_LOCAL; seen on an H100, segments were written twice) */
    ck_assert_int_eq(mf_cuda_capture_on(), 1);
    ck_assert_int_eq(subscribed, 1);
    ck_assert_int_eq(timestamp_registered, 1);
    ck_assert_int_eq(registered, 1);
    ck_assert_int_gt(enabled_callbacks, 30);
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL));
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_DEVICE));
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_MEMSET));
    mf_recorder_finish();
}
END_TEST

/*
 * A libcupti of another minor version (a PyTorch wheel's): one line naming
 * the file and both versions, a note, memory records only - kernel, copy,
 * set and device records change layout between minors.
 */
START_TEST(another_minor_version_records_memory_only)
{
    cupti_works = 1;
    fake_version = 130100;
    start_log("minor");
    const char *err = start_gpu_capturing_stderr();
    ck_assert_msg(strstr(err, "has CUPTI API version 130100, memflow was built with 130001: "
                              "GPU memory is recorded; kernel, copy, set and device records are "
                              "off (their layouts change between minor versions)\n") != NULL,
                  "%s", err);
    ck_assert_msg(strncmp(err, "memflow: ", 9) == 0 && strchr(err, '/') < strstr(err, " has"),
                  "%s", err); /* names the file (here the wrapper's, the test program) */
    ck_assert_int_eq(memflow_gpu_active(), 1);
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
    ck_assert(kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL));
    ck_assert(!kind_enabled(CUPTI_ACTIVITY_KIND_DEVICE));
    ck_assert(!kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    ck_assert(!kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
    mf_log *log = gpu_test_finish_and_read();
    uint64_t value = 0;
    ck_assert_uint_eq(gpu_test_notes(log, MF_NOTE_GPU_CUPTI_VERSION, &value), 1);
    ck_assert_uint_eq(value, (uint64_t)130100 << 32 | 130001);
    mf_log_free(log);
}
END_TEST

/* A libcupti of another major version: capture off before touching CUPTI. */
START_TEST(another_major_version_turns_capture_off)
{
    cupti_works = 1;
    fake_version = 28; /* CUDA 12.9 Update 1's numbering */
    start_log("major");
    const char *err = start_gpu_capturing_stderr();
    ck_assert_msg(strstr(err, "has CUPTI API version 28, memflow was built with 130001: GPU "
                              "capture is off (its record layouts differ); CPU capture goes "
                              "on\n") != NULL, "%s", err);
    ck_assert_int_eq(subscribed, 0);
    ck_assert_int_eq(registered, 0);
    ck_assert_int_eq(memflow_gpu_active(), 0);
    mf_recorder_finish();
}
END_TEST

/* The real libcupti of this machine is the one memflow was built with. */
START_TEST(version_policy)
{
    uint32_t loaded = 0;
    ck_assert_int_eq(__real_cuptiGetVersion(&loaded), CUPTI_SUCCESS);
    ck_assert_uint_eq(loaded, CUPTI_API_VERSION);
    ck_assert_uint_eq(mf_gpu_version_policy(130001, 130001), MF_GPU_ALL);
    ck_assert_uint_eq(mf_gpu_version_policy(130000, 130001), MF_GPU_ALL);
    ck_assert_uint_eq(mf_gpu_version_policy(130200, 130001), MF_GPU_MEMORY_ONLY);
    ck_assert_uint_eq(mf_gpu_version_policy(130001, 130200), MF_GPU_MEMORY_ONLY);
    ck_assert_uint_eq(mf_gpu_version_policy(140000, 130001), MF_GPU_NONE);
    ck_assert_uint_eq(mf_gpu_version_policy(28, 130001), MF_GPU_NONE);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gpu_cupti");
    TCase *tc = tcase_create("cupti_answers");
    tcase_add_test(tc, only_the_exit_flush_is_forced);
    tcase_add_test(tc, another_cupti_client_is_left_alone);
    tcase_add_test(tc, cupti_key_off_leaves_cupti_alone);
    tcase_add_test(tc, working_cupti_gets_every_kind);
    tcase_add_test(tc, another_minor_version_records_memory_only);
    tcase_add_test(tc, another_major_version_turns_capture_off);
    tcase_add_test(tc, version_policy);
    suite_add_tcase(s, tc);
    SRunner *runner = srunner_create(s);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
