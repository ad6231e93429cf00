/*
 * frames_api.c - symbolic frames through the recorder's private API
 * (mf_recorder_frame, mf_recorder_stack_of, mf_recorder_alloc_with_stack
 * with explicit times): what a Python capture or a PyTorch allocator history
 * writes.  It records by itself into the folder argv[1] (no memflow run, so
 * no malloc of its own is recorded), then a forked child records once more.
 *
 *   python    3 x 1000 bytes: c10::alloc_cpu < forward (torch, a library)
 *             < train_step (train.py:12) < <module> (train.py:40)
 *   import    2 x 500 bytes: _find_and_load (<frozen importlib._bootstrap>)
 *             < <module> (/usr/lib/python3.11/site.py): library frames only
 *   native    1 x 4096 bytes, allocated 5 ms and freed 4 ms before now
 *             (explicit past times): malloc < c10::alloc_cpu(unsigned long)
 *             < at::empty_cpu (EmptyTensor.cpp:40), C++ frames known by name
 *   merged    2 x 300 bytes: train_step (train.py:15) < embedder, a real
 *             return address in this file < <module> (train.py:40)
 *   child     the forked child: 1 x 1000 bytes with the python stack
 * Each frame is asked for twice; the log holds one FRAME record of each.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "memflow.h"
#include "recorder.h"

#define CPU MF_DEVICE(MF_DEVICE_CPU, 0)
#define PY MF_FRAME_PYTHON
#define NATIVE MF_FRAME_NATIVE

static uint32_t frame(const char *function, const char *file, uint32_t line, unsigned kind)
{
    uint32_t id = mf_recorder_frame(function, strlen(function), file, file ? strlen(file) : 0,
                                    line, kind);
    uint32_t again = mf_recorder_frame(function, strlen(function), file,
                                       file ? strlen(file) : 0, line, kind);
    if (id == 0 || again != id) {
        fprintf(stderr, "frames_api: frame %s: id %u, then %u\n", function, id, again);
        _exit(1);
    }
    return id;
}

static uint32_t stack_of(const uint32_t *frames, size_t n)
{
    uint64_t entries[8];
    for (size_t i = 0; i < n; i++)
        entries[i] = mf_stack_frame_entry(frames[i]);
    return mf_recorder_stack_of(entries, (uint32_t)n);
}

static void alloc(uint64_t addr, uint64_t bytes, uint32_t stack, uint64_t time_ns)
{
    mf_recorder_alloc_with_stack(CPU, MF_FLAG_EXPLICIT, time_ns, addr, bytes, bytes, 0, 0, 0,
                                 stack);
}

static uint32_t python_stack(void)
{
    uint32_t f[] = { frame("c10::alloc_cpu(unsigned long)", NULL, 0, NATIVE),
                     frame("forward", "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py",
                           114, PY),
                     frame("train_step", "/home/u/proj/train.py", 12, PY),
                     frame("<module>", "/home/u/proj/train.py", 40, PY) };
    return stack_of(f, 4);
}

static __attribute__((noinline)) uint64_t return_address(void)
{
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static volatile int calls;

static __attribute__((noinline)) void embedder(void)
{
    uint64_t here = return_address(); /* MARK: embedder call */
    calls++;
    uint64_t e[] = { mf_stack_frame_entry(frame("train_step", "/home/u/proj/train.py", 15, PY)),
                     here,
                     mf_stack_frame_entry(frame("<module>", "/home/u/proj/train.py", 40, PY)) };
    uint32_t merged = mf_recorder_stack_of(e, 3);
    alloc(0x60000, 300, merged, 0);
    alloc(0x61000, 300, mf_recorder_stack_of(e, 3), 0);
    calls++;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    const char *keys[] = { "path" }, *vals[] = { argv[1] };
    if (memflow_set_config(1, keys, vals) < 0 || memflow_set_state(MEMFLOW_RUN) < 0) {
        fprintf(stderr, "frames_api: %s\n", memflow_last_error());
        return 1;
    }
    uint64_t now = mf_clock_now();
    uint32_t native[] = { frame("malloc", NULL, 0, NATIVE),
                          frame("c10::alloc_cpu(unsigned long)", NULL, 0, NATIVE),
                          frame("at::empty_cpu", "aten/src/ATen/EmptyTensor.cpp", 40, NATIVE) };
    uint32_t s = stack_of(native, 3);
    alloc(0x50000, 4096, s, now - 5000000);
    mf_recorder_free_event(CPU, MF_FLAG_EXPLICIT, now - 4000000, 0x50000);

    for (uint64_t i = 0; i < 3; i++)
        alloc(0x10000 + i * 0x1000, 1000, python_stack(), 0);
    uint32_t imp[] = { frame("_find_and_load", "<frozen importlib._bootstrap>", 1178, PY),
                       frame("<module>", "/usr/lib/python3.11/site.py", 80, PY) };
    for (uint64_t i = 0; i < 2; i++)
        alloc(0x20000 + i * 0x1000, 500, stack_of(imp, 2), 0);
    embedder();

    pid_t pid = fork();
    if (pid == 0) {
        alloc(0x70000, 1000, python_stack(), 0);
        return 0;
    }
    int status = 1;
    waitpid(pid, &status, 0);
    return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
