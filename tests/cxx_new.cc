/*
 * cxx_new.cc - C++ operator new under `memflow run`, as [new.delete] says.
 *
 * A throwing operator new that gets no memory (2^62 bytes) throws
 * std::bad_alloc when no new_handler is installed; with one installed it
 * calls it again and again until the handler removes itself (here after 3
 * calls); the nothrow forms return nullptr, the aligned forms likewise.
 * Then, in scope "cxx:", 3 news and 3 deletes (one array, one aligned) that
 * the log must hold exactly.  Prints one line per check, exits 0 when all
 * hold, 1 when one does not (an abort is what memflow did before).
 */
#include <cstdint>
#include <cstdio>
#include <new>

#include "memflow.h"

static int handler_calls;
static int failures;

static void handler_three_times()
{
    if (++handler_calls == 3)
        std::set_new_handler(nullptr);
}

static void expect(bool ok, const char *what)
{
    std::printf("%s %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

static volatile std::size_t huge = std::size_t(1) << 62;

static bool throws_bad_alloc(void *(*fn)())
{
    try {
        fn();
    } catch (const std::bad_alloc &) {
        return true;
    }
    return false;
}

int main()
{
    expect(throws_bad_alloc([]() { return ::operator new(huge); }), "new throws bad_alloc");
    expect(throws_bad_alloc([]() { return ::operator new[](huge); }), "new[] throws bad_alloc");
    expect(throws_bad_alloc([]() { return ::operator new(huge, std::align_val_t(64)); }),
           "aligned new throws bad_alloc");
    std::set_new_handler(handler_three_times);
    expect(throws_bad_alloc([]() { return ::operator new(huge); }) && handler_calls == 3,
           "new calls the new_handler until it is removed, then throws");
    expect(::operator new(huge, std::nothrow) == nullptr, "nothrow new returns nullptr");
    handler_calls = 0;
    std::set_new_handler(handler_three_times);
    expect(::operator new[](huge, std::nothrow) == nullptr && handler_calls == 3,
           "nothrow new[] calls the new_handler, then returns nullptr");
    expect(::operator new(huge, std::align_val_t(128), std::nothrow) == nullptr,
           "aligned nothrow new returns nullptr");

    memflow_scope_push("cxx", 0);
    int *one = new int(7);
    char *many = new char[1000];
    struct alignas(64) line { char bytes[64]; };
    line *aligned = new line;
    expect(reinterpret_cast<std::uintptr_t>(aligned) % 64 == 0, "aligned new is aligned");
    delete one;
    delete[] many;
    delete aligned;
    memflow_scope_pop();
    return failures ? 1 : 0;
}
