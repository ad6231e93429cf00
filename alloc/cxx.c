/*
 * cxx.c - C++ operator new and delete, routed to the hooked malloc family.
 *
 * libstdc++'s operators already call malloc/free, but libjemalloc (loaded as
 * our dependency) exports its own operator new/delete; a C++ library that
 * is dlopen'd later (a Python extension, say) would bind to those and
 * bypass the hooks.  Defining the operators here, in the preloaded library,
 * makes every new/delete reach malloc/free first.  The symbols are the
 * Itanium C++ ABI names.
 *
 * A throwing operator new that gets no memory cannot throw std::bad_alloc
 * from C: it calls the installed std::new_handler if there is one (which
 * may free memory or throw), and aborts with a message if there is none.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "recorder.h"

/* The ABI fixes the parameters; delete uses only the pointer. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

typedef void (*new_handler_fn)(void);
/* std::get_new_handler(), weak: present only when libstdc++ is loaded. */
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));

static void *new_or_die(size_t size, size_t align)
{
    for (;;) {
        void *p = NULL;
        if (align <= sizeof(void *) * 2)
            p = malloc(size ? size : 1);
        else if (posix_memalign(&p, align, size ? size : 1) != 0)
            p = NULL;
        if (p)
            return p;
        new_handler_fn handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
        if (!handler) {
            fprintf(stderr, "memflow: out of memory in operator new(%zu)\n", size);
            abort();
        }
        handler();
    }
}

static void *new_nothrow(size_t size, size_t align)
{
    void *p = NULL;
    if (align <= sizeof(void *) * 2)
        return malloc(size ? size : 1);
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

/* Declarations keep -Wmissing-prototypes quiet; the names are the ABI's. */
#define NEW(name, args, body) MF_EXPORT void *name args; MF_EXPORT void *name args body
#define DELETE(name, args) MF_EXPORT void name args; MF_EXPORT void name args { free(p); }

NEW(_Znwm, (size_t n), { return new_or_die(n, 0); })
NEW(_Znam, (size_t n), { return new_or_die(n, 0); })
NEW(_ZnwmRKSt9nothrow_t, (size_t n, const void *nt), { (void)nt; return new_nothrow(n, 0); })
NEW(_ZnamRKSt9nothrow_t, (size_t n, const void *nt), { (void)nt; return new_nothrow(n, 0); })
NEW(_ZnwmSt11align_val_t, (size_t n, size_t a), { return new_or_die(n, a); })
NEW(_ZnamSt11align_val_t, (size_t n, size_t a), { return new_or_die(n, a); })
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *nt),
    { (void)nt; return new_nothrow(n, a); })
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *nt),
    { (void)nt; return new_nothrow(n, a); })

DELETE(_ZdlPv, (void *p))
DELETE(_ZdaPv, (void *p))
DELETE(_ZdlPvm, (void *p, size_t n))
DELETE(_ZdaPvm, (void *p, size_t n))
DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt))
DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt))
DELETE(_ZdlPvSt11align_val_t, (void *p, size_t a))
DELETE(_ZdaPvSt11align_val_t, (void *p, size_t a))
DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t a))
DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t a))
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt))
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t a, const void *nt))
