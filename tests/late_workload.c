/*
 * late_workload.c - a program whose records reach its log late, as CUPTI's
 * buffer thread writes GPU records (stamped when the GPU did the work,
 * written when the buffer is handed over), for memflow run's analysis
 * during the run (tests/run_analysis.sh).  Run under `memflow run`; it
 * links libmemflow and records through the same recorder as the preload
 * library.
 *
 * Usage: late_workload ROUNDS LATE_MS GROW_MS [kill]
 *   Each round the main thread mallocs and frees 2000 blocks of 100..1100
 *   bytes over about 60 ms, then a second thread (one for the whole run)
 *   records a batch of 50 gpu/0 allocations of 4096 bytes, each freed
 *   1 us later, stamped LATE_MS + round * GROW_MS before now, in its own
 *   scope "late:", each batch at its own addresses.  Exits 0; with kill,
 *   the main thread then records one more batch stamped when the program
 *   started, before every other record, and kills itself (SIGKILL: its last
 *   chunk reaches the log only when memflow run writes what it left staged,
 *   after the program is gone): late for an analysis that fed anything
 *   during the run, however wide its margin grew on a busy machine.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log_format.h"
#include "recorder.h"

#define BATCH 50

static uint64_t late_ns;
static int round_no;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int pending, done;

/* One batch of GPU blocks stamped late before now, at the addresses of
 * round r. */
static void batch(uint64_t late, int r)
{
    uint32_t scope = mf_recorder_intern("late:", 5);
    uint16_t gpu0 = MF_DEVICE(MF_DEVICE_GPU, 0);
    uint64_t t = mf_clock_now() - late;
    uint64_t base = 0x7f0000000000ull + (uint64_t)r * 0x100000ull;
    for (int i = 0; i < BATCH; i++) {
        uint64_t at = t + (uint64_t)i * 1000;
        mf_recorder_alloc_with_stack(gpu0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, at,
                                     base + i * 4096ull, 4096, 4096, scope, 0, 0, 0);
        mf_recorder_free_event(gpu0, MF_MEM_DEVICE << MF_MEMKIND_SHIFT, at + 1000,
                               base + i * 4096ull);
    }
}

static void *gpu_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!pending && !done)
            pthread_cond_wait(&wake, &lock);
        if (!pending && done)
            break;
        pending = 0;
        batch(late_ns, round_no);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void churn(unsigned seed)
{
    void *keep[64] = { 0 };
    for (int i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 16) % 64;
        free(keep[k]);
        keep[k] = malloc(100 + (seed >> 8) % 1000);
        if (i % 100 == 99) {
            struct timespec ts = { 0, 3000000 };
            nanosleep(&ts, NULL);
        }
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
}

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "kill") == 0)) {
        fprintf(stderr, "usage: late_workload ROUNDS LATE_MS GROW_MS [kill]\n");
        return 2;
    }
    uint64_t start_ns = mf_clock_now();
    int rounds = atoi(argv[1]);
    uint64_t late_ms = strtoull(argv[2], NULL, 10), grow_ms = strtoull(argv[3], NULL, 10);
    pthread_t t;
    if (pthread_create(&t, NULL, gpu_thread, NULL) != 0)
        return 1;
    for (int r = 0; r < rounds; r++) {
        churn((unsigned)r + 1);
        pthread_mutex_lock(&lock);
        late_ns = (late_ms + (uint64_t)r * grow_ms) * 1000000ull;
        round_no = r;
        pending = 1;
        pthread_cond_signal(&wake);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    if (argc == 5) {
        batch(mf_clock_now() - start_ns, rounds);
        kill(getpid(), SIGKILL);
    }
    return 0;
}
