/*
 * gpu_test_log.h - what the GPU Check suites (check_gpu, check_gpu_cupti)
 * share: a fresh log per test under tests/out/SUITE/NAME/, reading it back
 * with memflow's reader, and catching what a call writes on stderr.
 */
#ifndef MEMFLOW_GPU_TEST_LOG_H
#define MEMFLOW_GPU_TEST_LOG_H

#include <stdint.h>

#include "log_in_memory.h"

/* The folder of the log start_log made last. */
extern char gpu_test_scratch[4096];

/* Start the recorder into tests/out/SUITE/NAME/ (emptied), with sample_rate
 * ("0" when NULL). */
void gpu_test_start_log(const char *suite, const char *name, const char *sample_rate);

/* Finish the log and read it back (the test fails on damage). */
mf_log *gpu_test_finish_and_read(void);

/* Run fn(arg) with fd 2 sent to a file; what it wrote (static buffer). */
const char *gpu_test_capture_stderr(void (*fn)(void *), void *arg);

/* How many NOTE records with code the log has; *value: the last one's. */
size_t gpu_test_notes(const mf_log *log, unsigned code, uint64_t *value);

#endif /* MEMFLOW_GPU_TEST_LOG_H */
