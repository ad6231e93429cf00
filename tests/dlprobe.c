/*
 * dlprobe.c - a plugin that only tests/dlopen_runpath's RUNPATH finds (it is
 * in tests/.libs, on no other search path): tests/preload_dlopen.sh.
 */
int dlprobe_answer(void);

__attribute__((visibility("default"))) int dlprobe_answer(void)
{
    return 42;
}
