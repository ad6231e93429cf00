/*
 * scope.h - scope pushes for bindings whose "current scope" is not the
 * thread's stack top.  Python's memflow.profiler.scope follows contextvars
 * (each asyncio task has its own scope, as in MXNet): it composes the new
 * scope on the scope its context holds and still pushes it on the thread's
 * stack, so that every allocation the thread makes carries it.
 */
#ifndef MEMFLOW_SCOPE_H
#define MEMFLOW_SCOPE_H

#include <stdint.h>

#include "compiler.h"

/*
 * Push onto the calling thread's scope stack the scope `name` composed on
 * `base` (an interned scope id; MF_STRING_DEFAULT_SCOPE is "<unk>:") with
 * memflow_scope_push()'s rules, and record the push.  Returns the new
 * scope's id, or 0 on failure (NULL name, stack full, no memory; the
 * last error says which).  memflow_scope_pop() pops it.
 */
MF_EXPORT uint32_t mf_scope_push_on(uint32_t base, const char *name, int append);

#endif
