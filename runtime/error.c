/*
 * error.c - the per-thread "last error" behind memflow_last_error().
 *
 * Every public function that fails writes one message here naming what was
 * wrong (the key, the path, the value) before it returns -1.
 */
#include <stdarg.h>
#include <stdio.h>

#include "memflow.h"
#include "error.h"

static __thread char last_error[1024];

void mf_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

MF_EXPORT const char *memflow_last_error(void)
{
    return last_error;
}
