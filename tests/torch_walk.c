/*
 * torch_walk.c - a test tool: walk a PyTorch memory snapshot file with
 * common/torch/torch_snapshot.c and print what it saw, the memory it took and
 * its speed, one key=value a line (tests/torch_big.sh compares them).
 *
 *   torch_walk [--want segments|traces|all] [--memory BYTES] FILE
 *
 * entries=, segments=, blocks=, frames=, stacks=, devices=, one line per
 * action, unknown=, bad=, memo_evicted=, reader_peak= (bytes),
 * walker_peak= (bytes), maxrss_kib= (the process's peak resident set),
 * seconds=, entries_per_s=.  Exits 10 + the walk's status on failure.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "torch_snapshot.h"

typedef struct sums {
    uint64_t addr, frames;
} sums;

static int on_entry(void *ctx, const mf_torch_entry *e)
{
    sums *s = ctx;
    s->addr += e->addr;
    s->frames += e->nframes;
    return 0;
}

static int on_segment(void *ctx, const mf_torch_segment *seg)
{
    sums *s = ctx;
    s->addr += seg->address + seg->nblocks;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned want = MF_TORCH_WANT_ALL;
    mf_pickle_limits lim = { 0 };
    int i = 1;
    for (; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--want"))
            want = !strcmp(argv[i + 1], "segments") ? MF_TORCH_WANT_SEGMENTS
                 : !strcmp(argv[i + 1], "traces") ? MF_TORCH_WANT_TRACES : MF_TORCH_WANT_ALL;
        else if (!strcmp(argv[i], "--memory"))
            lim.memory = strtoull(argv[i + 1], NULL, 0);
        else
            break;
    }
    if (i != argc - 1) {
        fprintf(stderr, "usage: torch_walk [--want segments|traces|all] [--memory BYTES] FILE\n");
        return 2;
    }
    int fd = open(argv[i], O_RDONLY);
    char err[400];
    mf_pickle_reader *r = fd < 0 ? NULL : mf_pickle_reader_fd(fd, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s: %s\n", argv[i], fd < 0 ? "cannot open" : err);
        return 2;
    }
    mf_pickle_set_limits(r, &lim);
    sums s = { 0 };
    mf_torch_handler h = { .entry = on_entry, .segment = on_segment };
    mf_torch_stats st;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = mf_torch_walk(r, want, &h, &s, &st, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mf_pickle_reader_free(r);
    close(fd);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", argv[i], err);
        return 10 + rc;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("entries=%llu\nsegments=%llu\nblocks=%llu\nframes=%llu\nstacks=%llu\ndevices=%llu\n",
           (unsigned long long)st.entries, (unsigned long long)st.segments,
           (unsigned long long)st.blocks, (unsigned long long)st.frames,
           (unsigned long long)st.stacks, (unsigned long long)st.devices);
    for (int a = 0; a < MF_TORCH_ACTIONS; a++)
        if (st.by_action[a])
            printf("%s=%llu\n", mf_torch_action_name((mf_torch_action)a),
                   (unsigned long long)st.by_action[a]);
    printf("lookaheads=%llu\nlookahead_bytes=%llu\nguesses=%llu\nopcodes=%llu\n", (unsigned long long)st.pickle.lookaheads, (unsigned long long)st.pickle.lookahead_bytes, (unsigned long long)st.pickle.guesses, (unsigned long long)st.pickle.opcodes);
    printf("unknown=%llu\nbad=%llu\nmemo_evicted=%llu\nreader_peak=%zu\nwalker_peak=%zu\n"
           "maxrss_kib=%ld\nseconds=%.3f\nentries_per_s=%.0f\nchecksum=%llu\n",
           (unsigned long long)st.unknown_actions, (unsigned long long)st.bad_entries,
           (unsigned long long)st.pickle.memo_evicted, st.pickle.memory_peak, st.memory_peak,
           ru.ru_maxrss, secs, secs > 0 ? (double)st.entries / secs : 0.0,
           (unsigned long long)(s.addr ^ s.frames));
    return 0;
}
