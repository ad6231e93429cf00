/*
 * objects.c - the trace-object API of memflow.h: MXNet's profiler objects
 * (Domain, Task, Frame, Event, Counter and Marker) on top of the recorder's
 * TRACE records.  (Not the model's spans, analyze/, nor the Chrome trace
 * writer, render/.)
 *
 * An object is its kind, its domain's and name's interned string ids and a
 * process-unique id that pairs each BEGIN with its END (the analysis draws
 * tasks and frames as async spans by that id).  Counters keep their value
 * here, updated atomically, and record every new value.  Domains are
 * interned: one per name, kept for the life of the process.  Objects come
 * from malloc inside MF_INTERNAL_BEGIN/END, so under `memflow run` they are
 * not recorded as the program's memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "memflow.h"
#include "error.h"
#include "recorder.h"

struct memflow_domain {
    uint32_t name;                /* string id */
    struct memflow_domain *next;
};

typedef enum object_kind { KIND_TASK, KIND_FRAME, KIND_EVENT, KIND_COUNTER } object_kind;

struct memflow_object {
    object_kind kind;
    uint32_t domain;              /* string id; 0 = none */
    uint32_t name;                /* string id */
    uint64_t id;                  /* pairs BEGIN and END records */
    int64_t value;                /* counters; atomic */
};

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;
static memflow_domain *domains;
static uint64_t last_object_id;

static const char *const kind_names[] = { "task", "frame", "event", "counter" };

static uint32_t intern(const char *text)
{
    return mf_recorder_intern(text, strlen(text));
}

static void *internal_calloc(size_t size)
{
    MF_INTERNAL_BEGIN();
    void *p = calloc(1, size);
    MF_INTERNAL_END();
    return p;
}

MF_EXPORT memflow_domain *memflow_domain_create(const char *name)
{
    if (!name) {
        mf_set_error("memflow_domain_create: name is NULL");
        return NULL;
    }
    uint32_t id = intern(name);
    pthread_mutex_lock(&domains_lock);
    memflow_domain *d = domains;
    while (d && d->name != id)
        d = d->next;
    if (!d && (d = internal_calloc(sizeof *d))) {
        d->name = id;
        d->next = domains;
        domains = d;
    }
    pthread_mutex_unlock(&domains_lock);
    if (!d)
        mf_set_error("memflow_domain_create: out of memory for domain '%s'", name);
    return d;
}

static memflow_object *object_create(const char *fn, object_kind kind, memflow_domain *domain,
                                     const char *name)
{
    if (!name) {
        mf_set_error("%s: name is NULL", fn);
        return NULL;
    }
    memflow_object *o = internal_calloc(sizeof *o);
    if (!o) {
        mf_set_error("%s: out of memory for %s '%s'", fn, kind_names[kind], name);
        return NULL;
    }
    o->kind = kind;
    o->domain = domain ? domain->name : MF_STRING_UNKNOWN;
    o->name = intern(name);
    o->id = __atomic_add_fetch(&last_object_id, 1, __ATOMIC_RELAXED);
    return o;
}

MF_EXPORT memflow_object *memflow_task_create(memflow_domain *domain, const char *name)
{
    return object_create("memflow_task_create", KIND_TASK, domain, name);
}

MF_EXPORT memflow_object *memflow_frame_create(memflow_domain *domain, const char *name)
{
    return object_create("memflow_frame_create", KIND_FRAME, domain, name);
}

MF_EXPORT memflow_object *memflow_event_create(const char *name)
{
    return object_create("memflow_event_create", KIND_EVENT, NULL, name);
}

MF_EXPORT memflow_object *memflow_counter_create(memflow_domain *domain, const char *name)
{
    return object_create("memflow_counter_create", KIND_COUNTER, domain, name);
}

/* Check that o exists and is a counter (want_counter) or a span kind. */
static int check_object(const char *fn, const memflow_object *o, int want_counter)
{
    if (!o) {
        mf_set_error("%s: object is NULL", fn);
        return -1;
    }
    if ((o->kind == KIND_COUNTER) != want_counter) {
        mf_set_error("%s: '%s' is a %s; %s", fn, mf_recorder_string(o->name),
                     kind_names[o->kind],
                     want_counter ? "only counters have values" : "counters have no spans");
        return -1;
    }
    return 0;
}

/* The BEGIN record kind of each span kind; END is BEGIN + 1. */
static unsigned begin_kind(object_kind kind)
{
    return kind == KIND_TASK    ? MF_TRACE_TASK_BEGIN
           : kind == KIND_FRAME ? MF_TRACE_FRAME_BEGIN
                                : MF_TRACE_EVENT_BEGIN;
}

MF_EXPORT int memflow_object_start(memflow_object *o)
{
    if (check_object("memflow_object_start", o, 0) < 0)
        return -1;
    mf_recorder_trace(begin_kind(o->kind), 0, o->id, o->domain, o->name, 0);
    return 0;
}

MF_EXPORT int memflow_object_stop(memflow_object *o)
{
    if (check_object("memflow_object_stop", o, 0) < 0)
        return -1;
    mf_recorder_trace(begin_kind(o->kind) + 1, 0, o->id, o->domain, o->name, 0);
    return 0;
}

static void record_value(const memflow_object *c, int64_t value)
{
    mf_recorder_trace(MF_TRACE_COUNTER, 0, (uint64_t)value, c->domain, c->name, 0);
}

MF_EXPORT int memflow_counter_set(memflow_object *c, int64_t value)
{
    if (check_object("memflow_counter_set", c, 1) < 0)
        return -1;
    __atomic_store_n(&c->value, value, __ATOMIC_RELAXED);
    record_value(c, value);
    return 0;
}

MF_EXPORT int memflow_counter_add(memflow_object *c, int64_t delta)
{
    if (check_object("memflow_counter_add", c, 1) < 0)
        return -1;
    /* wraps like MXNet's unsigned counter instead of overflowing */
    uint64_t now = __atomic_add_fetch((uint64_t *)&c->value, (uint64_t)delta, __ATOMIC_RELAXED);
    record_value(c, (int64_t)now);
    return 0;
}

MF_EXPORT int64_t memflow_counter_value(const memflow_object *c)
{
    if (!c || c->kind != KIND_COUNTER)
        return 0;
    return __atomic_load_n(&c->value, __ATOMIC_RELAXED);
}

MF_EXPORT int memflow_mark(memflow_domain *domain, const char *name, memflow_marker_scope scope)
{
    if (!name) {
        mf_set_error("memflow_mark: name is NULL");
        return -1;
    }
    if (scope != MEMFLOW_MARKER_THREAD && scope != MEMFLOW_MARKER_PROCESS &&
        scope != MEMFLOW_MARKER_GLOBAL) {
        mf_set_error("memflow_mark: bad scope %d for marker '%s'; accepted: "
                     "MEMFLOW_MARKER_THREAD, MEMFLOW_MARKER_PROCESS, MEMFLOW_MARKER_GLOBAL",
                     (int)scope, name);
        return -1;
    }
    if (!mf_recording)
        return 0; /* do not intern names that will never be recorded */
    _Static_assert((int)MEMFLOW_MARKER_THREAD == (int)MF_MARKER_THREAD &&
                   (int)MEMFLOW_MARKER_PROCESS == (int)MF_MARKER_PROCESS &&
                   (int)MEMFLOW_MARKER_GLOBAL == (int)MF_MARKER_GLOBAL, "marker scopes");
    mf_recorder_trace(MF_TRACE_MARKER, 0, 0, domain ? domain->name : MF_STRING_UNKNOWN,
                      intern(name), (uint32_t)scope);
    return 0;
}

MF_EXPORT void memflow_object_destroy(memflow_object *o)
{
    MF_INTERNAL_BEGIN();
    free(o);
    MF_INTERNAL_END();
}
