/*
 * alloc_workload.c - a real program for the CPU-capture end-to-end tests.
 *
 * Run under `memflow run`, each mode does a known set of allocations inside
 * a known scope, so the tests can assert exact counts and bytes in the log:
 *
 *   fns             every malloc-family function once, scope "fns:"
 *   threads T N     T threads, each N mallocs + N frees in scope "t<i>:"
 *   fork            10 allocations in "parent:", a child does 7 in "child:"
 *   kill N          N allocations in "doomed:", prints "ready PID", waits to be
 *                   killed (SIGALRM ends it after 60 s if nobody does)
 *   hog MIB         chunks of MIB MiB in scope "hog:", each written through,
 *                   until an OOM killer ends it (60 s at most)
 *   abort N         N allocations in "doomed:", then abort()
 *   exit N          N allocations in "doomed:", then _exit(3)
 *   manythreads N   N short threads one after another, each one malloc and
 *                   one free of 100 bytes in scope "short:"
 *   rss N           N malloc/free pairs of 64 bytes, then prints "hwm KB", the
 *                   process's peak resident memory (VmHWM)
 *   exitcode N      every function (as fns), then exit(N)
 *   quickexit N     every function (as fns), then quick_exit(N)
 *   exec            execs itself (execl) in mode fns: two logs, one process
 *   execfail        an execl that fails (no such file), then returns 0
 *   vfork           a vfork child execs /bin/true; then returns 0
 *   orphan N        a child forks a grandchild and exits at once; the
 *                   grandchild (an orphan) makes N allocations in "orphan:"
 *                   and kills itself with SIGKILL; returns 0 once the orphan
 *                   is gone (reaped), 9 if it is not reaped within 60 s
 *   usable          in scope "usable:", one block of every size 0..20000 bytes
 *                   from malloc, then sizes up to 64 MiB around every size
 *                   class boundary from malloc and calloc, and aligned blocks
 *                   (posix_memalign, aligned_alloc, memalign) of 16 B..64 KiB
 *                   alignment; prints "blocks N usable U", the count and the
 *                   sum of malloc_usable_size (jemalloc's lookup of each
 *                   block), which the log's actual sizes must equal
 *   outlive N       N malloc/free pairs of 64 bytes in scope "before:", prints
 *                   "ready PID", waits for SIGUSR1 (60 s at most), then N
 *                   more in "after:" and exits 0: the test kills memflow run
 *                   meanwhile, and the program must write its log itself
 *   linger N        outlive N, then prints "done PID" and waits for a second
 *                   SIGUSR1 (60 s at most) before it exits 0
 *   dumps N         N mallocs of 100 bytes in scope "mid:", N / 2 of them
 *                   freed, then memflow_dumps(json) mid-run; prints the
 *                   JSON (the records still staged must be in it)
 *   serving N       dumps N without the JSON: prints "ready PID" while the
 *                   memflow serve that memflow_dumps started runs, waits for
 *                   SIGUSR1 (60 s at most) and exits 0
 *   reallocfail     in scope "rf:": malloc(100), a realloc to 2^62 bytes that
 *                   fails (NULL, ENOMEM, the block intact), a realloc to 200
 *                   that moves or not, then free: 2 allocs, 2 frees, 300 bytes
 *   ack N FILE      for bench/faults.sh: writes its pid into FILE's second
 *                   64-bit word, then N malloc/free pairs of 64 bytes in
 *                   scope "ack:", storing after each call the number of
 *                   calls that returned into FILE's first word (a shared
 *                   mapping: it survives SIGKILL); then waits to be killed
 *                   (60 s at most)
 *   closefds N FILE a daemon's start: closes every descriptor (close_range),
 *                   opens FILE again and again until it holds the number
 *                   the log had, writes "own data\n" through it, then N
 *                   mallocs + N frees of 32 bytes in scope "after:"; exits 0
 *                   if FILE still holds exactly its own 9 bytes, 4 if not,
 *                   5 if the log's number never came back
 *
 * Sizes are fixed so the tests can sum them (see tests/alloc_e2e.sh).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memflow.h"

static void *volatile sink;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "alloc_workload: %s failed\n", what);
        exit(99);
    }
}

/* 15 allocations, 15 frees (realloc counts one of each per resize). */
static void every_function(void)
{
    memflow_scope_push("fns", 0);
    char *a = malloc(100);                          /* alloc 100 */
    char *b = calloc(10, 30);                       /* alloc 300 */
    check(a && b && b[299] == 0, "malloc/calloc");
    a = realloc(a, 1000);                           /* free + alloc 1000 */
    a = realloc(a, 50);                             /* free + alloc 50 */
    char *c = realloc(NULL, 64);                    /* alloc 64 */
    check(realloc(c, 0) == NULL, "realloc(p, 0)");  /* free */
    char *d = reallocarray(NULL, 4, 25);            /* alloc 100 */
    void *e = NULL;
    check(posix_memalign(&e, 64, 200) == 0 && ((uintptr_t)e & 63) == 0, "posix_memalign");
    void *f = aligned_alloc(128, 256);              /* alloc 256 */
    void *g = memalign(32, 48);                     /* alloc 48 */
    void *h = valloc(10);                           /* alloc 10 */
    void *i = pvalloc(10);                          /* alloc 4096 */
    check(f && ((uintptr_t)f & 127) == 0, "aligned_alloc");
    check(g && ((uintptr_t)g & 31) == 0, "memalign");
    check(h && ((uintptr_t)h & 4095) == 0 && i && ((uintptr_t)i & 4095) == 0, "valloc");
    check(malloc_usable_size(a) >= 50 && malloc_usable_size(NULL) == 0, "malloc_usable_size");
    void *bad = NULL;
    check(posix_memalign(&bad, 3, 8) == EINVAL && bad == NULL, "posix_memalign EINVAL");
    void *j = malloc(0);                            /* alloc 0 */
    check(j != NULL, "malloc(0)");
    free(a); free(b); free(d); free(e); free(f); free(g); free(h); free(i); free(j);
    free(NULL);
    memflow_scope_pop();
}

/* One block: its usable size counted, then freed. */
static void count_usable(void *p, unsigned long *blocks, unsigned long long *usable)
{
    check(p != NULL, "usable: allocation");
    *usable += malloc_usable_size(p);
    ++*blocks;
    free(p);
}

/* Blocks of every size class, from every function that gives one. */
static void usable_sizes(void)
{
    unsigned long blocks = 0;
    unsigned long long usable = 0;
    memflow_scope_push("usable", 0);
    for (size_t size = 0; size <= 20000; size++)
        count_usable(malloc(size), &blocks, &usable);
    /* Around each power of two and its quarters: the class boundaries. */
    for (size_t base = 16384; base <= ((size_t)64 << 20); base *= 2)
        for (size_t q = 4; q < 8; q++)
            for (size_t d = 0; d < 3; d++) {
                size_t size = base / 4 * q + d - 1;
                count_usable(malloc(size), &blocks, &usable);
                count_usable(calloc(1, size), &blocks, &usable);
            }
    for (size_t align = 16; align <= 65536; align *= 2)
        for (size_t size = 1; size <= 3 * align; size += align / 4 + 7) {
            void *p = NULL;
            check(posix_memalign(&p, align, size) == 0, "usable: posix_memalign");
            count_usable(p, &blocks, &usable);
            count_usable(aligned_alloc(align, size), &blocks, &usable);
            count_usable(memalign(align, size), &blocks, &usable);
        }
    memflow_scope_pop();
    printf("blocks %lu usable %llu\n", blocks, usable);
}

typedef struct worker { int index; long ops; } worker;

static void *churn(void *arg)
{
    worker *w = arg;
    char scope[16];
    snprintf(scope, sizeof scope, "t%d", w->index);
    memflow_scope_push(scope, 0);
    void *ring[64] = { 0 };
    for (long k = 0; k < w->ops; k++) {
        int slot = (int)(k % 64);
        free(ring[slot]);                             /* free(NULL) the first round */
        ring[slot] = malloc((size_t)(16 + (k % 64) * 8));
    }
    for (int s = 0; s < 64; s++)
        free(ring[s]);
    memflow_scope_pop();
    return NULL;
}

static void threads(int n, long ops)
{
    pthread_t tid[64];
    worker w[64];
    for (int i = 0; i < n && i < 64; i++) {
        w[i] = (worker){ i, ops };
        check(pthread_create(&tid[i], NULL, churn, &w[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < n && i < 64; i++)
        pthread_join(tid[i], NULL);
}

static void forked(void)
{
    void *keep[10];
    memflow_scope_push("parent", 0);
    for (int i = 0; i < 10; i++)
        keep[i] = malloc(1000);
    memflow_scope_pop();
    fflush(stdout);
    pid_t pid = fork();
    check(pid >= 0, "fork");
    if (pid == 0) {
        memflow_scope_push("child", 0);
        for (int i = 0; i < 7; i++) {
            sink = malloc(777); /* through a volatile: the pair is not optimised out */
            free(sink);
        }
        memflow_scope_pop();
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child");
    for (int i = 0; i < 10; i++)
        free(keep[i]);
}

static void *short_life(void *arg)
{
    (void)arg;
    memflow_scope_push("short", 0);
    sink = malloc(100);
    free(sink);
    memflow_scope_pop();
    return NULL;
}

static void many_threads(long n)
{
    for (long i = 0; i < n; i++) {
        pthread_t t;
        check(pthread_create(&t, NULL, short_life, NULL) == 0, "pthread_create");
        pthread_join(t, NULL);
    }
}

static void resident_peak(long n)
{
    for (long i = 0; i < n; i++) {
        sink = malloc(64);
        free(sink);
    }
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            printf("hwm %ld\n", atol(line + 6));
    if (f)
        fclose(f);
}

/* Until an OOM killer ends it (or a minute passes): chunks of mib MiB, each
 * written through, allocated in the scope "hog". */
static void hog(long mib)
{
    alarm(60);
    memflow_scope_push("hog", 1);
    for (;;) {
        char *p = malloc((size_t)mib << 20);
        if (!p) {
            pause();
            continue;
        }
        memset(p, 1, (size_t)mib << 20);
    }
}

static void doomed(long n)
{
    memflow_scope_push("doomed", 0);
    for (long i = 0; i < n; i++)
        check(malloc(4000) != NULL, "malloc");
    memflow_scope_pop();
}

/* N malloc/free pairs of 64 bytes in scope. */
static void pairs(const char *scope, long n)
{
    memflow_scope_push(scope, 0);
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        check(p != NULL, "malloc");
        sink = p;
        free(p);
    }
    memflow_scope_pop();
}

static volatile sig_atomic_t go_on;

static void on_usr1(int sig)
{
    (void)sig;
    go_on = 1;
}

/* Outlive memflow run: allocate, say so, wait for SIGUSR1, allocate more. */
static void outlive(long n)
{
    signal(SIGUSR1, on_usr1);
    alarm(60);
    pairs("before", n);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (!go_on)
        pause();
    pairs("after", n);
}

/* outlive, then "done PID" and a wait for a second SIGUSR1 (60 s at most)
 * before the exit: memflow run sees the chunks of "after:" while the
 * program still runs. */
static void linger(long n)
{
    outlive(n);
    go_on = 0;
    printf("done %d\n", (int)getpid());
    fflush(stdout);
    while (!go_on)
        pause();
}

/* The statistics mid-run, while the last records are still staged: n
 * mallocs of 100 bytes in "mid:", half of them freed, then memflow_dumps
 * as JSON (NULL, said on stderr, when it fails). */
static const char *mid_run_dumps(long n)
{
    void **kept = calloc((size_t)n, sizeof *kept);
    check(kept != NULL, "calloc");
    memflow_scope_push("mid", 0);
    for (long i = 0; i < n; i++)
        check((kept[i] = malloc(100)) != NULL, "malloc");
    for (long i = 0; i < n / 2; i++)
        free(kept[i]);
    memflow_scope_pop();
    const char *json = memflow_dumps(0, "json", "total", 0);
    if (!json)
        fprintf(stderr, "alloc_workload: memflow_dumps: %s\n", memflow_last_error());
    return json;
}

/* dumps: the statistics mid-run on stdout. */
static int dumps_mid_run(long n)
{
    const char *json = mid_run_dumps(n);
    if (!json)
        return 1;
    puts(json);
    return 0;
}

/* dumps, then wait with its server running. */
static int serving(long n)
{
    signal(SIGUSR1, on_usr1);
    alarm(60);
    if (!mid_run_dumps(n))
        return 1;
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (!go_on)
        pause();
    return 0;
}

/* The descriptor number of this process's memflow log, -1 if none. */
static int log_descriptor(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int found = -1;
    while (d && (e = readdir(d))) {
        char link[300], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        size_t len = (size_t)n;
        if (strstr(target, "/memflow-") && len > 4 && strcmp(target + len - 4, ".mfl") == 0)
            found = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

static int close_everything_then_allocate(long n, const char *file)
{
    static const char own[] = "own data\n";
    int old = log_descriptor();
    close_range(0, ~0u, 0);
    int fd = -1;
    while (old >= 0 && fd != old) {
        fd = open(file, O_RDWR | O_CREAT, 0644);
        if (fd < 0 || fd > old)
            return 5;
    }
    if (old < 0 || ftruncate(fd, 0) != 0 || write(fd, own, sizeof own - 1) != sizeof own - 1)
        return 5;
    void **blocks = malloc((size_t)n * sizeof *blocks);
    memflow_scope_push("after", 0);
    for (long i = 0; i < n; i++)
        blocks[i] = malloc(32);
    for (long i = 0; i < n; i++)
        free(blocks[i]);
    memflow_scope_pop();
    free(blocks);
    char back[64];
    struct stat st;
    ssize_t got = pread(fd, back, sizeof back, 0);
    if (fstat(fd, &st) != 0 || st.st_size != sizeof own - 1 || got != sizeof own - 1 ||
        memcmp(back, own, sizeof own - 1) != 0)
        return 4;
    return 0;
}

static void realloc_fails(void)
{
    memflow_scope_push("rf", 0);
    char *p = malloc(100);
    check(p != NULL, "malloc");
    memset(p, 7, 100);
    /* Through a pointer: GCC's -Wuse-after-free does not know that a failed
     * realloc leaves the block alone. */
    void *(*volatile resize)(void *, size_t) = realloc;
    errno = 0;
    check(resize(p, (size_t)1 << 62) == NULL && errno == ENOMEM, "realloc to 2^62 fails");
    check(p[0] == 7 && p[99] == 7 && malloc_usable_size(p) >= 100, "block intact");
    p = realloc(p, 200);
    check(p && p[99] == 7, "realloc to 200");
    free(p);
    memflow_scope_pop();
}

/* Allocations acknowledged in a file that outlives a SIGKILL. */
static _Noreturn void acknowledged(long n, const char *file)
{
    int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0 && ftruncate(fd, 4096) == 0, "ack file");
    volatile uint64_t *ack = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(ack != MAP_FAILED, "mmap ack file");
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    ack[1] = (uint64_t)getpid();
    memflow_scope_push("ack", 0);
    for (long i = 0; i < n; i++) {
        sink = malloc(64);
        ack[0] = (uint64_t)(2 * i + 1);
        free(sink);
        ack[0] = (uint64_t)(2 * i + 2);
    }
    memflow_scope_pop();
    alarm(60);
    for (;;)
        pause();
}

static int exec_self(const char *mode)
{
    execl("/proc/self/exe", "alloc_workload", mode, (char *)NULL);
    return 1;
}

static int vfork_true(void)
{
    pid_t pid = vfork();
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int status;
    check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0, "vfork + exec /bin/true");
    return 0;
}

/* An orphan killed by a signal: only a subreaper can see how it ended. */
static int orphan(long n)
{
    int report[2];
    check(pipe(report) == 0, "pipe");
    pid_t child = fork();
    check(child >= 0, "fork");
    if (child == 0) {
        pid_t parent = getpid();
        pid_t grandchild = fork();
        if (grandchild == 0) {
            close(report[0]);
            close(report[1]);
            memflow_scope_push("orphan", 0);
            for (long i = 0; i < n; i++)
                check(malloc(100) != NULL, "malloc");
            struct timespec ms = { 0, 1000000 };
            for (int i = 0; i < 60000 && getppid() == parent; i++)
                nanosleep(&ms, NULL); /* until its parent has exited */
            raise(SIGKILL);
        }
        int w = (int)grandchild;
        check(write(report[1], &w, sizeof w) == sizeof w, "write");
        _exit(0);
    }
    close(report[1]);
    int grandchild = 0;
    check(read(report[0], &grandchild, sizeof grandchild) == sizeof grandchild, "read");
    waitpid(child, NULL, 0);
    for (int i = 0; i < 60000; i++) {
        if (kill(grandchild, 0) < 0 && errno == ESRCH)
            return 0;
        struct timespec ms = { 0, 1000000 };
        nanosleep(&ms, NULL);
    }
    return 9;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fns";
    long n = argc > 2 ? atol(argv[2]) : 0;
    if (strcmp(mode, "fns") == 0) {
        every_function();
    } else if (strcmp(mode, "threads") == 0 && argc > 3) {
        threads((int)n, atol(argv[3]));
    } else if (strcmp(mode, "rss") == 0) {
        resident_peak(n);
    } else if (strcmp(mode, "manythreads") == 0) {
        many_threads(n);
    } else if (strcmp(mode, "fork") == 0) {
        forked();
    } else if (strcmp(mode, "kill") == 0) {
        /* as an interactive program has them (a background job of sh
         * inherits SIGINT and SIGQUIT ignored) */
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        alarm(60);
        doomed(n);
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            pause();
    } else if (strcmp(mode, "hog") == 0) {
        hog(n);
    } else if (strcmp(mode, "abort") == 0) {
        doomed(n);
        abort();
    } else if (strcmp(mode, "exitcode") == 0) {
        every_function();
        exit((int)n);
    } else if (strcmp(mode, "quickexit") == 0) {
        every_function();
        quick_exit((int)n);
    } else if (strcmp(mode, "linger") == 0) {
        linger(n);
    } else if (strcmp(mode, "outlive") == 0) {
        outlive(n);
    } else if (strcmp(mode, "dumps") == 0) {
        return dumps_mid_run(n);
    } else if (strcmp(mode, "serving") == 0) {
        return serving(n);
    } else if (strcmp(mode, "usable") == 0) {
        usable_sizes();
    } else if (strcmp(mode, "reallocfail") == 0) {
        realloc_fails();
    } else if (strcmp(mode, "exec") == 0) {
        return exec_self("fns");
    } else if (strcmp(mode, "execfail") == 0) {
        execl("/nonexistent/memflow-test", "x", (char *)NULL);
        check(errno == ENOENT, "execl of a missing file fails with ENOENT");
    } else if (strcmp(mode, "vfork") == 0) {
        return vfork_true();
    } else if (strcmp(mode, "orphan") == 0) {
        return orphan(n);
    } else if (strcmp(mode, "ack") == 0 && argc > 3) {
        acknowledged(n, argv[3]);
    } else if (strcmp(mode, "closefds") == 0 && argc > 3) {
        return close_everything_then_allocate(n, argv[3]);
    } else if (strcmp(mode, "exit") == 0) {
        doomed(n);
        _exit(3);
    } else {
        fprintf(stderr, "usage: alloc_workload fns|threads T N|fork|kill N|hog MIB|abort N|exit N\n");
        return 2;
    }
    return 0;
}
