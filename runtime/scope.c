/*
 * scope.c - per-thread scope stacks with MXNet's naming rules.
 *
 * A scope is an interned string; each thread's stack of ids lives in its
 * recorder state, so every event the thread records carries the id on top.
 * Rules (MXNet profiler.scope): the default is "<unk>:", a pushed name gets
 * a trailing ':' if missing, and in append mode it is concatenated to the
 * current scope unless that is the default.
 */
#include <string.h>

#include "memflow.h"
#include "config.h"
#include "error.h"
#include "recorder.h"
#include "scope.h"
#include "thread_state.h"

/* Compose the new scope string into buf; returns its length. */
static size_t compose_scope(const char *current, const char *name, int append, char *buf,
                            size_t cap)
{
    size_t len = 0;
    if (append && strcmp(current, "<unk>:") != 0) {
        len = strlen(current);
        if (len > cap - 2)
            len = cap - 2;
        memcpy(buf, current, len);
    }
    size_t n = strlen(name);
    if (n > cap - 2 - len)
        n = cap - 2 - len;
    memcpy(buf + len, name, n);
    len += n;
    if (len == 0 || buf[len - 1] != ':')
        buf[len++] = ':';
    buf[len] = 0;
    return len;
}

uint32_t mf_scope_push_on(uint32_t base, const char *name, int append)
{
    if (!name) {
        mf_set_error("memflow_scope_push: name is NULL");
        return 0;
    }
    mf_thread_state *t = mf_thread_state_get();
    if (!t) {
        mf_set_error("memflow_scope_push: out of memory for the thread's state");
        return 0;
    }
    if (t->depth + 1 >= MF_SCOPE_DEPTH) {
        t->overflow++;
        mf_set_error("memflow_scope_push: scope stack full (%d deep) pushing '%s'",
                     MF_SCOPE_DEPTH, name);
        return 0;
    }
    char buf[MF_STRING_MAX_LEN + 2];
    MF_INTERNAL_BEGIN();
    size_t len = compose_scope(mf_recorder_string(base), name, append, buf, sizeof buf - 1);
    uint32_t id = mf_recorder_intern(buf, len);
    MF_INTERNAL_END();
    t->stack[++t->depth] = id ? id : MF_STRING_DEFAULT_SCOPE;
    mf_recorder_scope_event(t, t->stack[t->depth], MF_SCOPE_PUSH);
    return t->stack[t->depth];
}

MF_EXPORT int memflow_scope_push(const char *name, int append)
{
    return mf_scope_push_on(mf_recorder_current_scope(), name, append) ? 0 : -1;
}

MF_EXPORT int memflow_scope_pop(void)
{
    mf_thread_state *t = mf_thread_state_get();
    if (t && t->overflow) {
        t->overflow--; /* the matching push failed */
        return 0;
    }
    if (!t || t->depth == 0) {
        mf_set_error("memflow_scope_pop: nothing to pop (the scope is the default '<unk>:')");
        return -1;
    }
    uint32_t id = t->stack[t->depth--];
    mf_recorder_scope_event(t, id, MF_SCOPE_POP);
    return 0;
}

MF_EXPORT const char *memflow_scope_current(void)
{
    return mf_recorder_string(mf_recorder_current_scope());
}
