/*
 * model_oom.h - the model's out-of-memory post-mortems: at each OOM record
 * (torch's history, its OOM observer, a failed CUDA allocation), what the
 * process held on the device at that moment - reserved (its blocks: the
 * caching allocator's segments) against allocated (its sub-blocks: the
 * tensors), the largest free gap inside its segments against the request,
 * what was live by scope and by site, and what grew in the last tenth of
 * the time before it.
 *
 * model.c routes OOM records here and hands over, for that moment, the
 * process's live blocks and sub-blocks on the device (mf_oom_probe_*: the
 * blocks' and sub-blocks' visits call them); this part keeps the first
 * MF_OOM_KEPT post-mortems and counts the rest.
 */
#ifndef MEMFLOW_MODEL_OOM_H
#define MEMFLOW_MODEL_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct mf_sites;

typedef struct mf_ooms {
    mf_oom *kept;             /* in time order */
    size_t n, cap;
    uint64_t total;
    int oom;                  /* out of memory (of the host) */
} mf_ooms;

/* One post-mortem being made: what the visits of the live blocks fill. */
typedef struct mf_oom_probe mf_oom_probe;

void mf_ooms_init(mf_ooms *o);

/*
 * OOM record e of process pid begins a post-mortem (t0_ns: the model's
 * first event; sites: NULL without stacks).  NULL when past MF_OOM_KEPT
 * (counted) or out of memory.
 */
mf_oom_probe *mf_ooms_begin(mf_ooms *o, const mf_event *e, uint32_t pid, uint64_t t0_ns,
                            struct mf_sites *sites);

/* What OOM record e of process pid asked and when (the head of its
 * post-mortem; nothing of what was live): as mf_ooms_begin takes it. */
mf_oom mf_oom_head(const mf_event *e, uint32_t pid, uint64_t t0_ns, struct mf_sites *sites);

/* Visit callbacks (ctx: the probe): a live block (segment) of the process
 * on the device, a live sub-block (tensor).  Always 0 (visit them all). */
int mf_oom_probe_block(const mf_block *b, void *ctx);
int mf_oom_probe_sub(const mf_block *b, void *ctx);

/* The visits are done: settle the post-mortem and keep it.  0, or -1. */
int mf_ooms_end(mf_ooms *o, mf_oom_probe *p);

/* out's ooms and ooms_total. */
void mf_ooms_settle(const mf_ooms *o, mf_model *out);

void mf_ooms_free(mf_ooms *o);

#endif /* MEMFLOW_MODEL_OOM_H */
