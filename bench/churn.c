/*
 * churn.c - benchmark workload: a malloc/free churn, with no memflow in it.
 *
 * The program the benchmark (bench/run.sh) runs unprofiled, under
 * `memflow run`, heaptrack and valgrind massif.  It is a plain C program so
 * that every tool sees the same thing: the profiler is the only difference.
 *
 * The mix, exactly: OPS/2 mallocs and OPS/2 frees (default OPS = 2,000,000,
 * so 1,000,000 + 1,000,000).  Each thread owns a table of SLOTS live blocks
 * (default 4096).  Every step picks a random slot; a block already there is
 * freed first, then a new block is malloc'd into the slot, and its first and
 * last bytes are written.  When the mallocs are done the table is emptied.
 * So the working set grows to a few thousand live blocks and then churns.
 * Sizes (fixed-seed xorshift, identical in every run): 1 in 64 blocks is
 * 4 KiB..64 KiB, the others 16..4095 bytes skewed small (a power-of-two
 * bucket picked geometrically: half are 16..31 bytes, a quarter 32..63, ...).
 *
 * With -u MIN-MAX the sizes are uniform in MIN..MAX bytes instead (-u
 * 16-2063 with -n 4000000 is the churn named in the capture-speed target:
 * 2 M malloc/free pairs of 16..2063 bytes, where glibc's malloc is slower
 * and jemalloc runs it in about a third of glibc's time).
 *
 * With -t T the work is shared by T threads (thread k does its share of the
 * mallocs with its own seed and table); the main thread only waits.
 *
 * With -r RATE the run is paced at about RATE operations a second in all
 * (each thread sleeps whenever it is ahead of its share of that pace, checked
 * every 1,024 mallocs): a program that allocates steadily for a long time,
 * as a training loop does, instead of as fast as the allocator allows.
 *
 * With -e FILE it writes CLOCK_MONOTONIC (ns) into FILE as its last act
 * (bench/wait.sh: the time from the program's exit to the profiler's).
 *
 * Usage: churn [-n OPS] [-t THREADS] [-s SLOTS] [-u MIN-MAX] [-r RATE] [-q] [-e FILE]
 * Prints one line: the operation counts and a checksum of the sizes (so the
 * compiler cannot drop the work).  Exit status 1 on bad usage or no memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What one thread does and what it reports back. */
typedef struct churn_job {
    unsigned long mallocs; /* how many mallocs to do */
    unsigned slots;        /* live-block table size */
    size_t uniform_min;    /* with uniform_span: sizes uniform in min..min+span-1 */
    size_t uniform_span;   /* 0: the skewed mix of pick_size */
    uint32_t seed;
    double mallocs_per_ns; /* with -r: this thread's pace; 0: as fast as it can */
    unsigned long frees;   /* out: frees done */
    uint64_t checksum;     /* out: sum of the sizes asked for */
    int failed;            /* out: a malloc returned NULL */
} churn_job;

static uint32_t xorshift32(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

/* A block size: mostly small, geometric over power-of-two buckets. */
static size_t pick_size(uint32_t *rng)
{
    uint32_t r = xorshift32(rng);
    if ((r & 63) == 0)
        return 4096 + (xorshift32(rng) % (60u * 1024));
    unsigned bucket = (unsigned)__builtin_ctz((r >> 6) | 0x80); /* 0..7 */
    size_t base = (size_t)16 << bucket;
    return base + xorshift32(rng) % base;
}

static size_t next_size(const churn_job *job, uint32_t *rng)
{
    if (job->uniform_span)
        return job->uniform_min + xorshift32(rng) % job->uniform_span;
    return pick_size(rng);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* With -r: sleep until `done` mallocs since `start` are no longer ahead. */
static void keep_pace(const churn_job *job, uint64_t start, unsigned long done)
{
    uint64_t due = start + (uint64_t)((double)done / job->mallocs_per_ns);
    uint64_t now = now_ns();
    if (due > now) {
        struct timespec ts = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

static void *churn_thread(void *arg)
{
    churn_job *job = arg;
    uint32_t rng = job->seed;
    char **table = calloc(job->slots, sizeof *table);
    size_t *sizes = calloc(job->slots, sizeof *sizes);
    if (!table || !sizes) {
        job->failed = 1;
        return NULL;
    }
    uint64_t start = now_ns();
    for (unsigned long i = 0; i < job->mallocs;) {
        /* with -r, the pace is kept between runs of 1,024 mallocs: the
         * loop of an unpaced churn is the one it always was */
        unsigned long run_end = job->mallocs - i > 1024 ? i + 1024 : job->mallocs;
        if (job->mallocs_per_ns > 0)
            keep_pace(job, start, i);
        for (; i < run_end; i++) {
            unsigned slot = xorshift32(&rng) % job->slots;
            if (table[slot]) {
                free(table[slot]);
                job->frees++;
            }
            size_t size = next_size(job, &rng);
            char *p = malloc(size);
            if (!p) {
                job->failed = 1;
                goto mallocs_done;
            }
            p[0] = (char)i;
            p[size - 1] = (char)size;
            table[slot] = p;
            sizes[slot] = size;
            job->checksum += size;
        }
    }
mallocs_done:
    for (unsigned s = 0; s < job->slots; s++)
        if (table[s]) {
            job->checksum += (unsigned char)table[s][sizes[s] - 1];
            free(table[s]);
            job->frees++;
        }
    free(sizes);
    free(table);
    return NULL;
}

/* CLOCK_MONOTONIC now, in ns, into path: 0, or 1 (said on stderr). */
static int write_end(const char *path)
{
    uint64_t now = now_ns();
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%llu\n", (unsigned long long)now) < 0 || fclose(f) != 0) {
        fprintf(stderr, "churn: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static int usage(const char *why)
{
    fprintf(stderr, "churn: %s\nusage: churn [-n OPS (even, default 2000000)] "
                    "[-t THREADS (1..64)] [-s SLOTS (default 4096)] [-u MIN-MAX (bytes)] "
                    "[-r OPS_PER_SECOND] [-q] "
                    "[-e END_FILE]\n",
            why);
    return 1;
}

/* Parse a positive decimal number; 0 on anything else. */
static unsigned long parse_count(const char *text)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-')
        return 0;
    return v;
}

/* "MIN-MAX" with 1 <= MIN <= MAX <= 1 GiB into *min, *span; 0, or -1. */
static int parse_range(const char *text, size_t *min, size_t *span)
{
    char low[32];
    const char *dash = strchr(text, '-');
    if (!dash || (size_t)(dash - text) >= sizeof low)
        return -1;
    memcpy(low, text, (size_t)(dash - text));
    low[dash - text] = 0;
    unsigned long a = parse_count(low), b = parse_count(dash + 1);
    if (a == 0 || b < a || b > (1ul << 30))
        return -1;
    *min = a;
    *span = b - a + 1;
    return 0;
}

int main(int argc, char **argv)
{
    unsigned long ops = 2000000, threads = 1, slots = 4096, rate = 0;
    size_t uniform_min = 0, uniform_span = 0;
    int quiet = 0, opt;
    const char *end_file = NULL;
    while ((opt = getopt(argc, argv, "n:t:s:u:r:qe:")) != -1) {
        switch (opt) {
        case 'n': ops = parse_count(optarg); break;
        case 't': threads = parse_count(optarg); break;
        case 's': slots = parse_count(optarg); break;
        case 'u':
            if (parse_range(optarg, &uniform_min, &uniform_span) < 0)
                return usage("-u wants MIN-MAX bytes, 1 <= MIN <= MAX <= 1073741824");
            break;
        case 'r':
            if ((rate = parse_count(optarg)) == 0)
                return usage("-r wants a positive number of operations a second");
            break;
        case 'q': quiet = 1; break;
        case 'e': end_file = optarg; break;
        default: return usage("unknown option");
        }
    }
    if (optind != argc)
        return usage("unexpected argument");
    if (ops == 0 || ops % 2)
        return usage("-n wants a positive even number of operations");
    if (threads == 0 || threads > 64)
        return usage("-t wants 1..64 threads");
    if (slots == 0 || slots > (1ul << 24))
        return usage("-s wants 1..16777216 slots");

    static churn_job jobs[64];
    static pthread_t tids[64];
    unsigned long mallocs = ops / 2;
    for (unsigned long k = 0; k < threads; k++) {
        jobs[k].mallocs = mallocs / threads + (k < mallocs % threads);
        jobs[k].slots = (unsigned)slots;
        jobs[k].uniform_min = uniform_min;
        jobs[k].uniform_span = uniform_span;
        jobs[k].seed = 2463534242u + 7919u * (uint32_t)k;
        jobs[k].mallocs_per_ns = rate ? (double)rate / 2 / (double)threads / 1e9 : 0;
    }
    if (threads == 1) {
        churn_thread(&jobs[0]);
    } else {
        for (unsigned long k = 0; k < threads; k++) {
            int err = pthread_create(&tids[k], NULL, churn_thread, &jobs[k]);
            if (err) {
                fprintf(stderr, "churn: pthread_create: %s\n", strerror(err));
                return 1;
            }
        }
        for (unsigned long k = 0; k < threads; k++)
            pthread_join(tids[k], NULL);
    }

    unsigned long frees = 0;
    uint64_t checksum = 0;
    for (unsigned long k = 0; k < threads; k++) {
        if (jobs[k].failed) {
            fprintf(stderr, "churn: thread %lu: out of memory\n", k);
            return 1;
        }
        frees += jobs[k].frees;
        checksum += jobs[k].checksum;
    }
    if (!quiet)
        printf("churn: threads=%lu mallocs=%lu frees=%lu ops=%lu checksum=%llu\n", threads,
               mallocs, frees, mallocs + frees, (unsigned long long)checksum);
    return end_file ? write_end(end_file) : 0;
}
