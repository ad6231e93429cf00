/*
 * dlopen_runpath.c - dlopen a library by its bare name, found through this
 * program's own RUNPATH (tests/.libs) and nowhere else, as programs with
 * plugins beside them do: under `memflow run` the preload library's dlopen
 * must leave this program the caller (tests/preload_dlopen.sh).
 *
 * Usage: dlopen_runpath [NAME]   (default libdlprobe.so)
 * Prints "NAME: ANSWER" (dlprobe_answer()), or "NAME: " and dlerror() and
 * exits 1.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "libdlprobe.so";
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    int (*answer)(void) = h ? (int (*)(void))dlsym(h, "dlprobe_answer") : NULL;
    if (!answer) {
        printf("%s: %s\n", name, dlerror());
        return 1;
    }
    printf("%s: %d\n", name, answer());
    dlclose(h);
    return 0;
}
