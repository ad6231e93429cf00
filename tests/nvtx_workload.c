/*
 * nvtx_workload.c - a plain C program that marks its phases with NVTX v3
 * (header-only: nothing of memflow is linked).  Under `memflow run` the NVTX
 * headers load memflow's injection library, so the ranges become scopes.
 * Fixed allocations (tests/nvtx_e2e.sh asserts them), every block freed in
 * the scope that made it:
 *
 *   encoder:layer0:   3 x 1000 bytes     nvtxRangePushA, nested
 *   encoder:          2 x 500 bytes      after the inner pop
 *   attention:héad:   4 x 250 bytes      domain "mydomain", registered string
 *                                        (nvtxDomainRangePushEx), then a wide
 *                                        string (nvtxRangePushW) inside it
 *   decoder:          5 x 64 bytes       on a thread named "worker"
 *
 * Also: nvtxRangeStartA("step") on the main thread ended by the worker
 * (nvtxRangeEnd), a domain range "load" in "mydomain", a mark "checkpoint",
 * and one nvtxRangePop() with nothing pushed.  With "check" it verifies the
 * levels NVTX returns (push 0,1; pop 1,0; the stray pop -1), which hold only
 * when a tool is attached.  It prints "injection=<NVTX_INJECTION64_PATH>".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

static int failures;
static nvtxRangeId_t step;

static void expect(int got, int want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "nvtx_workload: %s returned %d, expected %d\n", what, got, want);
        failures++;
    }
}

static void churn(int n, size_t size)
{
    void *blocks[8];
    for (int i = 0; i < n; i++)
        blocks[i] = malloc(size);
    for (int i = 0; i < n; i++)
        free(blocks[i]);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "worker"); /* before its first event */
    nvtxRangePushA("decoder");
    churn(5, 64);
    nvtxRangePop();
    nvtxRangeEnd(step); /* a range started on the main thread */
    return NULL;
}

int main(int argc, char **argv)
{
    int check = argc > 1 && strcmp(argv[1], "check") == 0;
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    printf("injection=%s\n", inj ? inj : "");

    int level0 = nvtxRangePushA("encoder");
    int level1 = nvtxRangePushA("layer0");
    churn(3, 1000);
    int popped1 = nvtxRangePop();
    churn(2, 500);
    int popped0 = nvtxRangePop();
    int stray = nvtxRangePop();

    nvtxDomainHandle_t domain = nvtxDomainCreateA("mydomain");
    nvtxStringHandle_t attention = nvtxDomainRegisterStringA(domain, "attention");
    nvtxEventAttributes_t attr;
    memset(&attr, 0, sizeof attr);
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = attention;
    nvtxDomainRangePushEx(domain, &attr);
    nvtxRangePushW(L"h\u00e9ad");
    churn(4, 250);
    nvtxRangePop();
    nvtxDomainRangePop(domain);

    attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attr.message.ascii = "load";
    nvtxDomainRangeEnd(domain, nvtxDomainRangeStartEx(domain, &attr));
    nvtxMarkA("checkpoint");

    step = nvtxRangeStartA("step");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 2;
    pthread_join(t, NULL);

    if (check) {
        expect(level0, 0, "first push");
        expect(level1, 1, "second push");
        expect(popped1, 1, "first pop");
        expect(popped0, 0, "second pop");
        expect(stray, -1, "pop with nothing pushed");
    }
    return failures ? 1 : 0;
}
