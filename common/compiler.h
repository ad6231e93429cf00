/*
 * compiler.h - the compiler macros every part of memflow uses: branch hints,
 * inlining and symbol visibility.  Nothing else: including it pulls in no
 * runtime or analysis declaration, so offline code can use it without the
 * recorder.
 */
#ifndef MEMFLOW_COMPILER_H
#define MEMFLOW_COMPILER_H

#define MF_LIKELY(x) __builtin_expect(!!(x), 1)
#define MF_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* A slow path kept out of line, so that the fast path inlined beside it
 * stays small. */
#define MF_NOINLINE __attribute__((noinline))

/* Inlined wherever it is called.  For a helper whose only effect is a
 * prefetch: GCC 12 drops a call to such a function when it is not inlined
 * before its interprocedural analysis (which sees no effect), prefetch and
 * all. */
#define MF_ALWAYS_INLINE inline __attribute__((always_inline))

/* Visible outside the shared object that defines it (the build hides the
 * rest with -fvisibility=hidden; a version script decides what is exported). */
#define MF_EXPORT __attribute__((visibility("default")))

#endif /* MEMFLOW_COMPILER_H */
