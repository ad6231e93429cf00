/*
 * check_objects.c - Check suite of the trace-object API (runtime/objects.c)
 * and of mf_scope_push_on (runtime/scope.c), with exact expected records.
 *
 * Each test runs in its own forked process (CK_FORK), records into a fresh
 * folder through the public API, finishes the log and reads its TRACE and
 * SCOPE records back with tests/tracecheck, which decodes them straight
 * from the chunks.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"
#include "recorder.h"
#include "scope.h"

static const char *top(void)
{
    const char *t = getenv("top_builddir");
    return t ? t : ".";
}

/* A fresh output folder for this test; recording starts there. */
static void start_in_scratch(const char *name)
{
    char dir[4096], cmd[4200];
    snprintf(dir, sizeof dir, "%s/tests/out/check_objects/%s", top(), name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    const char *k = "path", *v = dir;
    ck_assert_int_eq(memflow_set_config(1, &k, &v), 0);
    ck_assert_int_eq(memflow_set_state(MEMFLOW_RUN), 0);
}

/* Finish the log and return tracecheck's lines (static buffer). */
static const char *recorded(int scopes)
{
    static char out[16384];
    char cmd[8192];
    mf_recorder_finish();
    snprintf(cmd, sizeof cmd, "'%s/tests/tracecheck' %s '%s'", top(), scopes ? "-s" : "",
             mf_recorder_log_path());
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    ck_assert_int_eq(pclose(p), 0);
    return out;
}

START_TEST(spans_pair_by_object_id)
{
    memflow_domain *d = memflow_domain_create("MyDomain");
    memflow_object *task = memflow_task_create(d, "load");
    memflow_object *frame = memflow_frame_create(d, "iteration");
    memflow_object *event = memflow_event_create("sum");
    memflow_object *untracked = memflow_task_create(NULL, "no domain");
    ck_assert_ptr_nonnull(task);
    memflow_object_start(task); /* before recording: not kept */
    start_in_scratch("spans");
    ck_assert_int_eq(memflow_object_start(frame), 0);
    ck_assert_int_eq(memflow_object_start(task), 0);
    ck_assert_int_eq(memflow_object_start(event), 0);
    ck_assert_int_eq(memflow_object_stop(event), 0);
    ck_assert_int_eq(memflow_object_stop(task), 0);
    ck_assert_int_eq(memflow_object_stop(frame), 0);
    ck_assert_int_eq(memflow_object_start(untracked), 0);
    ck_assert_int_eq(memflow_object_stop(untracked), 0);
    memflow_object_destroy(task);
    memflow_object_destroy(frame);
    memflow_object_destroy(event);
    memflow_object_destroy(untracked);
    memflow_object_destroy(NULL);
    ck_assert_str_eq(recorded(0), "trace frame_begin MyDomain iteration 2\n"
                                  "trace task_begin MyDomain load 1\n"
                                  "trace event_begin - sum 3\n"
                                  "trace event_end - sum 3\n"
                                  "trace task_end MyDomain load 1\n"
                                  "trace frame_end MyDomain iteration 2\n"
                                  "trace task_begin - no domain 4\n"
                                  "trace task_end - no domain 4\n");
}
END_TEST

START_TEST(counters_record_every_value)
{
    memflow_domain *d = memflow_domain_create("counters");
    memflow_object *c = memflow_counter_create(d, "queue");
    start_in_scratch("counters");
    ck_assert_int_eq(memflow_counter_set(c, 100), 0);
    ck_assert_int_eq(memflow_counter_add(c, 5), 0);
    ck_assert_int_eq(memflow_counter_add(c, -150), 0);
    ck_assert_int_eq(memflow_counter_value(c), -45);
    ck_assert_int_eq(memflow_counter_set(c, INT64_MAX), 0);
    ck_assert_int_eq(memflow_counter_add(c, 1), 0); /* wraps, no undefined overflow */
    ck_assert_int_eq(memflow_counter_value(c), INT64_MIN);
    ck_assert_int_eq(memflow_counter_value(NULL), 0);
    memflow_object_destroy(c);
    ck_assert_str_eq(recorded(0), "trace counter counters queue 100\n"
                                  "trace counter counters queue 105\n"
                                  "trace counter counters queue -45\n"
                                  "trace counter counters queue 9223372036854775807\n"
                                  "trace counter counters queue -9223372036854775808\n");
}
END_TEST

START_TEST(markers_keep_their_scope)
{
    memflow_domain *d = memflow_domain_create("marks");
    ck_assert_int_eq(memflow_mark(d, "not yet", MEMFLOW_MARKER_PROCESS), 0);
    start_in_scratch("markers");
    ck_assert_int_eq(memflow_mark(d, "epoch", MEMFLOW_MARKER_PROCESS), 0);
    ck_assert_int_eq(memflow_mark(d, "step", MEMFLOW_MARKER_THREAD), 0);
    ck_assert_int_eq(memflow_mark(NULL, "all", MEMFLOW_MARKER_GLOBAL), 0);
    ck_assert_int_eq(memflow_mark(d, "bad", (memflow_marker_scope)3), -1);
    ck_assert_ptr_nonnull(strstr(memflow_last_error(), "bad scope 3 for marker 'bad'"));
    ck_assert_int_eq(memflow_mark(d, NULL, MEMFLOW_MARKER_THREAD), -1);
    ck_assert_str_eq(recorded(0), "trace marker marks epoch 0 process\n"
                                  "trace marker marks step 0 thread\n"
                                  "trace marker - all 0 global\n");
}
END_TEST

START_TEST(wrong_kind_and_null_are_errors)
{
    memflow_domain *d = memflow_domain_create("errs");
    memflow_object *task = memflow_task_create(d, "t");
    memflow_object *counter = memflow_counter_create(d, "c");
    start_in_scratch("errors");
    ck_assert_int_eq(memflow_counter_set(task, 1), -1);
    ck_assert_str_eq(memflow_last_error(),
                     "memflow_counter_set: 't' is a task; only counters have values");
    ck_assert_int_eq(memflow_counter_add(NULL, 1), -1);
    ck_assert_str_eq(memflow_last_error(), "memflow_counter_add: object is NULL");
    ck_assert_int_eq(memflow_object_start(counter), -1);
    ck_assert_str_eq(memflow_last_error(),
                     "memflow_object_start: 'c' is a counter; counters have no spans");
    ck_assert_int_eq(memflow_object_stop(NULL), -1);
    ck_assert_ptr_null(memflow_task_create(d, NULL));
    ck_assert_str_eq(memflow_last_error(), "memflow_task_create: name is NULL");
    ck_assert_ptr_null(memflow_domain_create(NULL));
    ck_assert_ptr_null(memflow_event_create(NULL));
    ck_assert_str_eq(recorded(0), "");
    memflow_object_destroy(task);
    memflow_object_destroy(counter);
}
END_TEST

START_TEST(domains_are_interned)
{
    memflow_domain *a = memflow_domain_create("one");
    ck_assert_ptr_eq(memflow_domain_create("one"), a);
    ck_assert_ptr_ne(memflow_domain_create("two"), a);
}
END_TEST

static void *stop_elsewhere(void *task)
{
    memflow_object_stop(task);
    return NULL;
}

START_TEST(task_stops_on_another_thread)
{
    memflow_object *task = memflow_task_create(memflow_domain_create("io"), "read");
    start_in_scratch("threads");
    memflow_object_start(task);
    pthread_t t;
    pthread_create(&t, NULL, stop_elsewhere, task);
    pthread_join(t, NULL);
    ck_assert_str_eq(recorded(0), "trace task_begin io read 1\n"
                                  "trace task_end io read 1\n");
    memflow_object_destroy(task);
}
END_TEST

START_TEST(push_on_composes_on_the_given_base)
{
    start_in_scratch("push_on");
    ck_assert_int_eq(memflow_scope_push("net", 0), 0);
    uint32_t net = mf_recorder_current_scope();
    /* another context's scope is the base, whatever the thread's top is */
    uint32_t id = mf_scope_push_on(MF_STRING_DEFAULT_SCOPE, "task", 1);
    ck_assert_str_eq(mf_recorder_string(id), "task:");
    ck_assert_str_eq(memflow_scope_current(), "task:");
    id = mf_scope_push_on(net, "dense0", 1);
    ck_assert_str_eq(mf_recorder_string(id), "net:dense0:");
    ck_assert_uint_eq(mf_scope_push_on(net, NULL, 1), 0);
    ck_assert_str_eq(memflow_last_error(), "memflow_scope_push: name is NULL");
    memflow_scope_pop();
    memflow_scope_pop();
    memflow_scope_pop();
    ck_assert_str_eq(recorded(1), "push net: 1 t0\n"
                                  "push task: 2 t0\n"
                                  "push net:dense0: 3 t0\n"
                                  "pop net:dense0: 2 t0\n"
                                  "pop task: 1 t0\n"
                                  "pop net: 0 t0\n");
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *c = tcase_create("objects");
    tcase_add_test(c, spans_pair_by_object_id);
    tcase_add_test(c, counters_record_every_value);
    tcase_add_test(c, markers_keep_their_scope);
    tcase_add_test(c, wrong_kind_and_null_are_errors);
    tcase_add_test(c, domains_are_interned);
    tcase_add_test(c, task_stops_on_another_thread);
    suite_add_tcase(s, c);
    c = tcase_create("scope");
    tcase_add_test(c, push_on_composes_on_the_given_base);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(trace_suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
