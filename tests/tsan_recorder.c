/*
 * tsan_recorder.c - the recorder under ThreadSanitizer.
 *
 * Built with -fsanitize=thread together with the runtime's own sources (not
 * libmemflow.so: every access must be instrumented), when the compiler
 * supports it (configure's HAVE_TSAN).  Eight worker threads push and pop
 * scopes (interning new names), record CPU events as the preloaded malloc
 * does (gated by mf_recording), record GPU blocks through the public API
 * and intern strings; a ninth thread starts and ends short threads (their
 * states and chunks are recycled); a controller changes the configuration
 * and the state (run, pause, resume, stop) all the while.  ThreadSanitizer
 * fails the test (exit 66) on any data race; and the log must have grown
 * without a failed claim or a dropped event.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log_writer.h"
#include "memflow.h"
#include "recorder.h"

#define WORKERS 8
#define ROUNDS 1000
#define EVENTS_PER_ROUND 20

static int stop_control;

/* What the preloaded malloc and free do with a block. */
static void cpu_block(uintptr_t addr)
{
    if (mf_recording_now() && !mf_thread_internal)
        mf_recorder_cpu_alloc((void *)addr, 64, 64, 0);
    if (mf_recording_now() && !mf_thread_internal)
        mf_recorder_cpu_free((void *)addr, 0);
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    char name[64];
    for (int r = 0; r < ROUNDS; r++) {
        snprintf(name, sizeof name, "w%u_%d", (unsigned)id, r % 40);
        memflow_scope_push(name, r & 1);
        for (int k = 0; k < EVENTS_PER_ROUND; k++)
            cpu_block(0x100000000000u + id * 0x10000000u + (uintptr_t)k * 64);
        void *gpu = (void *)(0x200000000000u + id * 0x10000000u + (uintptr_t)r * 4096);
        memflow_record_alloc("gpu/0", gpu, 4096, 4096, name, 0);
        memflow_record_free("gpu/0", gpu);
        snprintf(name, sizeof name, "interned %u %d", (unsigned)id, r);
        mf_recorder_intern(name, strlen(name));
        memflow_scope_pop();
    }
    return NULL;
}

static void *short_life(void *arg)
{
    memflow_scope_push("short", 1);
    cpu_block(0x300000000000u + (uintptr_t)arg * 64);
    memflow_scope_pop();
    return NULL;
}

static void *spawner(void *arg)
{
    (void)arg;
    for (uintptr_t i = 0; i < 200; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_life, (void *)i) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

static void *controller(void *arg)
{
    const char *keys[] = { "sample_rate", "dump_period" };
    char rate[16];
    (void)arg;
    for (int i = 0; !__atomic_load_n(&stop_control, __ATOMIC_RELAXED); i++) {
        snprintf(rate, sizeof rate, "%d", 50 + i % 7);
        const char *vals[] = { rate, "0.5" };
        memflow_set_config(2, keys, vals);
        memflow_set_state(MEMFLOW_RUN);
        memflow_pause();
        memflow_resume();
        if (i % 3 == 0)
            memflow_set_state(MEMFLOW_STOP);
    }
    return NULL;
}

/* One more thread that configures while the controller starts and stops. */
static void *configurer(void *arg)
{
    const char *key = "profile_api";
    (void)arg;
    for (int i = 0; !__atomic_load_n(&stop_control, __ATOMIC_RELAXED); i++) {
        const char *val = i & 1 ? "1" : "0";
        memflow_set_config(1, &key, &val);
    }
    return NULL;
}

int main(void)
{
    const char *top = getenv("top_builddir");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/out/tsan_recorder", top ? top : ".");
    const char *k = "path", *v = dir;
    if (memflow_set_config(1, &k, &v) < 0 || memflow_set_state(MEMFLOW_RUN) < 0) {
        fprintf(stderr, "tsan_recorder: %s\n", memflow_last_error());
        return 1;
    }
    pthread_t workers[WORKERS], spawn, control, configure;
    pthread_create(&control, NULL, controller, NULL);
    pthread_create(&configure, NULL, configurer, NULL);
    pthread_create(&spawn, NULL, spawner, NULL);
    for (uintptr_t i = 0; i < WORKERS; i++)
        pthread_create(&workers[i], NULL, worker, (void *)i);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(workers[i], NULL);
    pthread_join(spawn, NULL);
    __atomic_store_n(&stop_control, 1, __ATOMIC_RELAXED);
    pthread_join(control, NULL);
    pthread_join(configure, NULL);
    mf_recorder_finish();
    mf_log_writer_stats st;
    mf_log_writer_get_stats(&st);
    if (st.dropped_events != 0 || st.failed_claims != 0) {
        fprintf(stderr, "tsan_recorder: %llu events dropped, %llu failed claims\n",
                (unsigned long long)st.dropped_events, (unsigned long long)st.failed_claims);
        return 1;
    }
    printf("tsan_recorder: %llu chunks, log %s\n", (unsigned long long)st.claims,
           mf_recorder_log_path());
    return 0;
}
