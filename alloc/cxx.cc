/*
 * cxx.cc - C++ operator new and delete, routed to the hooked malloc family.
 *
 * libstdc++'s operators already call malloc/free, but libjemalloc (loaded as
 * our dependency) exports its own operator new/delete; a C++ library that
 * is dlopen'd later (a Python extension, say) would bind to those and
 * bypass the hooks.  Defining the replaceable operators here, in the
 * preloaded library, makes every new/delete reach malloc/free (and so the
 * recorder) first.
 *
 * They behave as [new.delete] says: a throwing operator new that gets no
 * memory calls the installed std::new_handler and tries again, and throws
 * std::bad_alloc when there is none; the nothrow forms do the same but
 * return nullptr instead of throwing.  An allocation that fails records
 * nothing (malloc records only what it returns).
 */
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

void *allocate(std::size_t size, std::size_t align)
{
    if (size == 0)
        size = 1;
    if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__)
        return std::malloc(size);
    void *p = nullptr;
    return posix_memalign(&p, align, size) == 0 ? p : nullptr;
}

void *new_or_throw(std::size_t size, std::size_t align)
{
    for (;;) {
        if (void *p = allocate(size, align))
            return p;
        std::new_handler handler = std::get_new_handler();
        if (!handler)
            throw std::bad_alloc();
        handler();
    }
}

void *new_or_null(std::size_t size, std::size_t align) noexcept
{
    try {
        return new_or_throw(size, align);
    } catch (...) {
        return nullptr;
    }
}

std::size_t alignment(std::align_val_t a)
{
    return static_cast<std::size_t>(a);
}

} // namespace

void *operator new(std::size_t n) { return new_or_throw(n, 0); }
void *operator new[](std::size_t n) { return new_or_throw(n, 0); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept { return new_or_null(n, 0); }
void *operator new[](std::size_t n, const std::nothrow_t &) noexcept { return new_or_null(n, 0); }
void *operator new(std::size_t n, std::align_val_t a) { return new_or_throw(n, alignment(a)); }
void *operator new[](std::size_t n, std::align_val_t a) { return new_or_throw(n, alignment(a)); }
void *operator new(std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
    return new_or_null(n, alignment(a));
}
void *operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t &) noexcept
{
    return new_or_null(n, alignment(a));
}

void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept
{
    std::free(p);
}
