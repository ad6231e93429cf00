/*
 * stacks_api.c - two cases of `memflow run --stacks` beyond the malloc hooks:
 *
 *   record  memflow_record_alloc carries the stack of the code that reports
 *           the block: pool_grab() reports 6 blocks of 5120 bytes on gpu/0
 *   fork    same_site() allocates 333 bytes per call: 2 calls in the parent,
 *           then a forked child makes 3 from the very same call site, whose
 *           stack the parent's log already has: the child's log must get it
 *           (and its modules) again
 *   skip    mf_recorder_stack(skip), the GPU capture's entry point: helper()
 *           takes the stack with skip 0 twice (site: helper) and with skip 1
 *           three times (site: its caller, outer_site), recording a 100-byte
 *           block on gpu/1 with each
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memflow.h"
#include "recorder.h"

static char arena[6 * 5120];
static void *volatile sink;
static volatile int calls;

__attribute__((noinline)) static int pool_grab(int i)
{
    int rc = memflow_record_alloc("gpu/0", arena + i * 5120, 5120, 8192, "block", 0);
    calls++; /* after the call: no tail call, pool_grab stays on the stack */
    return rc;
}

__attribute__((noinline)) static void same_site(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = malloc(333);
        p[0] = 1;
        sink = p;
    }
}

__attribute__((noinline)) static void helper(unsigned skip, uintptr_t addr)
{
    uint32_t stack = mf_recorder_stack(skip);
    mf_recorder_alloc_with_stack(MF_DEVICE(MF_DEVICE_GPU, 1), MF_FLAG_EXPLICIT, 0, addr, 100, 100,
                                 0, 0, 0, stack);
    calls++;
}

__attribute__((noinline)) static void outer_site(void)
{
    for (uintptr_t i = 0; i < 2; i++)
        helper(0, 0x1000 + i * 0x100);
    for (uintptr_t i = 0; i < 3; i++)
        helper(1, 0x2000 + i * 0x100);
    calls++;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "skip") == 0) {
        outer_site();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "record") == 0) {
        int bad = 0;
        for (int i = 0; i < 6; i++)
            bad |= pool_grab(i);
        return bad;
    }
    if (argc == 2 && strcmp(argv[1], "fork") == 0) {
        same_site(2);
        pid_t pid = fork();
        if (pid == 0) {
            same_site(3);
            _exit(0);
        }
        int status = 1;
        waitpid(pid, &status, 0);
        return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    return 2;
}
