/*
 * names.c - readable, interned names: kernels for the trace, and the
 * variable or library behind a GPU block.
 *
 * CUPTI gives kernels their mangled C++ symbol (_Z13dense_forwardPKf...).
 * The first time a name is seen it is demangled with the C++ runtime's
 * __cxa_demangle (looked up at run time: every CUDA program has libstdc++
 * loaded; the plugin itself stays C) and interned; CUPTI shares one name
 * string among all records of a kernel, so later records are answered from a
 * small cache keyed by the string's address.  A name that is not a mangled
 * symbol (an extern "C" kernel) is kept as it is.
 *
 * A block's MEMORY2 record may name the variable (a module's __device__ or
 * __managed__ global) and, with allocation sources on, the shared object
 * that asked for it; untagged blocks show the library's file name, so
 * cuBLAS or NCCL workspaces are told apart from the program's own memory.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

typedef char *(*demangle_fn)(const char *mangled, char *out, size_t *len, int *status);

#define NAME_CACHE_SLOTS 1024u

typedef struct name_slot {
    const char *text;
    uint32_t id;
} name_slot;

static name_slot cache[NAME_CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static demangle_fn demangle;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
    demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (demangle)
        return;
    void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (cxx)
        demangle = (demangle_fn)dlsym(cxx, "__cxa_demangle");
}

/* Intern the demangled form of name, or name itself. */
static uint32_t intern_readable(const char *name)
{
    pthread_once(&demangle_once, find_demangler);
    int status = -1;
    char *readable = (demangle && name[0] == '_' && name[1] == 'Z')
                         ? demangle(name, NULL, NULL, &status) : NULL;
    uint32_t id;
    if (readable && status == 0)
        id = mf_recorder_intern(readable, strlen(readable));
    else
        id = mf_recorder_intern(name, strlen(name));
    free(readable);
    return id;
}

uint32_t mf_gpu_kernel_name(const char *name)
{
    if (!name)
        return MF_STRING_UNKNOWN;
    name_slot *slot = &cache[((uintptr_t)name >> 3) % NAME_CACHE_SLOTS];
    pthread_mutex_lock(&cache_lock);
    uint32_t id = slot->text == name ? slot->id : 0;
    pthread_mutex_unlock(&cache_lock);
    if (id)
        return id;
    id = intern_readable(name);
    pthread_mutex_lock(&cache_lock);
    slot->text = name;
    slot->id = id;
    pthread_mutex_unlock(&cache_lock);
    return id;
}

uint32_t mf_gpu_memory_name(const char *variable, const char *source, int tagged)
{
    if (variable && *variable)
        return mf_recorder_intern(variable, strlen(variable));
    if (tagged || !source || !*source)
        return MF_STRING_UNKNOWN;
    const char *slash = strrchr(source, '/');
    const char *file = slash ? slash + 1 : source;
    return *file ? mf_recorder_intern(file, strlen(file)) : MF_STRING_UNKNOWN;
}
