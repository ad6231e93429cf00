/*
 * worker.h - a second thread that runs a part of the model in the order
 * the model hands it work (model_picture.c: the picture, on another core
 * while the model reads the log).  Work comes as fixed-size items, copied
 * into batches; a full batch goes to the thread, and the model waits only
 * when every batch is in flight (memory stays bounded: MF_WORKER_BATCHES
 * batches of MF_WORKER_ITEMS items).  The thread runs the items in the
 * order they were put, one after another, so its results are exactly
 * those of running them inline.
 */
#ifndef MEMFLOW_WORKER_H
#define MEMFLOW_WORKER_H

#include <stddef.h>

/* Items per batch.  The thread that drains the ring sleeps until the next
 * batch, so larger batches wake it less often (the picture's 136-byte ops:
 * 4.5 MB in flight at most; 1024 items woke it four times as often, and a
 * 4M-event render took 7% longer). */
#define MF_WORKER_ITEMS 4096
#define MF_WORKER_BATCHES 8

typedef struct mf_worker mf_worker;

/*
 * Start a thread (every signal blocked in it: they stay the caller's) that
 * calls run(ctx, item) for each item put, in order; run returns 0, or -1
 * (out of memory), which mf_worker_sync reports.  NULL when no thread can
 * start, the process may use one core only, or MEMFLOW_MODEL_THREAD=0:
 * the caller runs its work inline.
 */
mf_worker *mf_worker_start(size_t item_size, int (*run)(void *ctx, const void *item), void *ctx);

/* Room for the next item, to fill before the next call (it belongs to the
 * thread after that).  May wait for the thread when every batch is in
 * flight. */
void *mf_worker_put(mf_worker *w);

/* Wait until every item put has run.  0, or -1 when a run returned -1. */
int mf_worker_sync(mf_worker *w);

/* Sync, end the thread and free w (NULL: nothing). */
void mf_worker_stop(mf_worker *w);

#endif /* MEMFLOW_WORKER_H */
