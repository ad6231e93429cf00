/*
 * worker.c - the second thread of worker.h: batches in a ring, the model
 * filling the one after the last queued, the thread running the oldest.
 * One lock, taken once per batch on each side.  The environment variable
 * MEMFLOW_MODEL_THREAD=0 keeps every part of the model on the caller's
 * thread (as on one core).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

struct mf_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t queued;       /* a batch was queued, or stop (the thread waits) */
    pthread_cond_t ran;          /* a batch ran (the model waits) */
    size_t item_size;
    int (*run)(void *ctx, const void *item);
    void *ctx;
    unsigned char *batches;      /* MF_WORKER_BATCHES * MF_WORKER_ITEMS items */
    size_t count[MF_WORKER_BATCHES];
    uint64_t head, tail;         /* batches [head, tail) queued (under lock) */
    size_t filling;              /* items in batch tail (the model's) */
    int stop, failed;            /* under lock */
};

static unsigned char *batch(mf_worker *w, uint64_t k)
{
    return w->batches + (size_t)(k % MF_WORKER_BATCHES) * MF_WORKER_ITEMS * w->item_size;
}

static void *loop(void *arg)
{
    mf_worker *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->head == w->tail && !w->stop)
            pthread_cond_wait(&w->queued, &w->lock);
        if (w->head == w->tail)
            break;
        uint64_t k = w->head;
        size_t n = w->count[k % MF_WORKER_BATCHES];
        pthread_mutex_unlock(&w->lock);
        int failed = 0;
        for (size_t i = 0; i < n; i++)
            failed |= w->run(w->ctx, batch(w, k) + i * w->item_size) < 0;
        pthread_mutex_lock(&w->lock);
        w->failed |= failed;
        w->head++;
        pthread_cond_broadcast(&w->ran);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Whether this process may run on more than one core, and may use it. */
static int spare_core(void)
{
    const char *want = getenv("MEMFLOW_MODEL_THREAD");
    if (want && strcmp(want, "0") == 0)
        return 0;
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 1;
}

static void worker_free(mf_worker *w)
{
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->queued);
    pthread_cond_destroy(&w->ran);
    free(w->batches);
    free(w);
}

mf_worker *mf_worker_start(size_t item_size, int (*run)(void *ctx, const void *item), void *ctx)
{
    if (!spare_core())
        return NULL;
    mf_worker *w = calloc(1, sizeof *w);
    if (!w || !(w->batches = malloc(MF_WORKER_BATCHES * MF_WORKER_ITEMS * item_size))) {
        free(w);
        return NULL;
    }
    w->item_size = item_size;
    w->run = run;
    w->ctx = ctx;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->queued, NULL);
    pthread_cond_init(&w->ran, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, loop, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        worker_free(w);
        return NULL;
    }
    return w;
}

/* Queue the batch being filled (if it holds items); then wait until
 * fewer than `room` batches are queued. */
static void queue_filling(mf_worker *w, uint64_t room)
{
    pthread_mutex_lock(&w->lock);
    if (w->filling) {
        w->count[w->tail % MF_WORKER_BATCHES] = w->filling;
        w->tail++;
        w->filling = 0;
        pthread_cond_signal(&w->queued);
    }
    while (w->tail - w->head >= room)
        pthread_cond_wait(&w->ran, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

void *mf_worker_put(mf_worker *w)
{
    if (w->filling == MF_WORKER_ITEMS)
        queue_filling(w, MF_WORKER_BATCHES);
    return batch(w, w->tail) + w->filling++ * w->item_size;
}

int mf_worker_sync(mf_worker *w)
{
    queue_filling(w, 1);
    pthread_mutex_lock(&w->lock);
    int failed = w->failed;
    pthread_mutex_unlock(&w->lock);
    return failed ? -1 : 0;
}

void mf_worker_stop(mf_worker *w)
{
    if (!w)
        return;
    queue_filling(w, 1);
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->queued);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    worker_free(w);
}
