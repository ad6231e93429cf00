/*
 * gpu_test_log.c - the log set-up the GPU Check suites share (see
 * gpu_test_log.h).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_test_log.h"
#include "memflow.h"
#include "recorder.h"

char gpu_test_scratch[4096];

void gpu_test_start_log(const char *suite, const char *name, const char *sample_rate)
{
    const char *top = getenv("top_builddir");
    snprintf(gpu_test_scratch, sizeof gpu_test_scratch, "%s/tests/out/%s", top ? top : ".",
             suite);
    mkdir(gpu_test_scratch, 0755);
    size_t len = strlen(gpu_test_scratch);
    snprintf(gpu_test_scratch + len, sizeof gpu_test_scratch - len, "/%s", name);
    mkdir(gpu_test_scratch, 0755);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.mfl", gpu_test_scratch);
    ck_assert_int_eq(system(cmd), 0);
    const char *keys[] = { "path", "sample_rate" };
    const char *vals[] = { gpu_test_scratch, sample_rate ? sample_rate : "0" };
    ck_assert_msg(memflow_set_config(2, keys, vals) == 0, "%s", memflow_last_error());
    ck_assert_msg(mf_recorder_start() == 0, "%s", memflow_last_error());
}

mf_log *gpu_test_finish_and_read(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", mf_recorder_log_path());
    mf_recorder_finish();
    mf_log *log = NULL;
    char err[512];
    int rc = mf_log_read(path, &log, err, sizeof err);
    ck_assert_msg(rc == 0, "reading %s: %d %s", path, rc, rc < 0 ? err : log->damage);
    return log;
}

const char *gpu_test_capture_stderr(void (*fn)(void *), void *arg)
{
    static char text[4096];
    fflush(stderr);
    FILE *tmp = tmpfile();
    ck_assert_ptr_nonnull(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return text;
}

size_t gpu_test_notes(const mf_log *log, unsigned code, uint64_t *value)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n_events; i++)
        if (log->events[i].type == MF_REC_NOTE && log->events[i].note.code == code) {
            n++;
            *value = log->events[i].note.value;
        }
    return n;
}
