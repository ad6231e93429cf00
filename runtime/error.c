/*
 * error.c - the per-thread "last error" behind memflow_last_error().
 *
 * Every public function that fails writes one message here naming what was
 * wrong (the key, the path, the value) before it returns -1.
 *
 * The message buffer is not thread-local storage of this library: libmemflow
 * has initial-exec TLS (the recorder's hot path), so all of its TLS must fit
 * in the static TLS block that glibc keeps for libraries loaded later, which
 * is a few hundred bytes in a big process (Python + torch).  When the CUDA
 * driver loads the GPU plugin there, libmemflow comes with it; a 1 KiB
 * buffer in that block made the load fail.  So each thread's buffer is a
 * page mapped the first time that thread fails, found through a pthread key
 * and unmapped when the thread exits.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>

#include "memflow.h"
#include "error.h"

#define ERROR_BYTES 1024

static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;

static void error_buffer_free(void *buffer)
{
    munmap(buffer, ERROR_BYTES);
}

static void error_key_create(void)
{
    pthread_key_create(&error_key, error_buffer_free);
}

/* The calling thread's buffer, mapped on first use; NULL if out of memory. */
static char *error_buffer(void)
{
    pthread_once(&error_once, error_key_create);
    char *buffer = pthread_getspecific(error_key);
    if (buffer)
        return buffer;
    buffer = mmap(NULL, ERROR_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buffer == MAP_FAILED)
        return NULL;
    if (pthread_setspecific(error_key, buffer) != 0) {
        munmap(buffer, ERROR_BYTES);
        return NULL;
    }
    return buffer;
}

void mf_set_error(const char *fmt, ...)
{
    char *buffer = error_buffer();
    if (!buffer)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buffer, ERROR_BYTES, fmt, ap);
    va_end(ap);
}

MF_EXPORT const char *memflow_last_error(void)
{
    pthread_once(&error_once, error_key_create);
    const char *buffer = pthread_getspecific(error_key);
    return buffer ? buffer : "";
}
