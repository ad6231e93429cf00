/*
 * error.h - the per-thread last error behind memflow_last_error().
 */
#ifndef MEMFLOW_ERROR_H
#define MEMFLOW_ERROR_H

#include "compiler.h"

/* Set the calling thread's last error (printf format); used by the API. */
MF_EXPORT void mf_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* MEMFLOW_ERROR_H */
