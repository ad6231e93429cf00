/*
 * static_prog.c - a statically linked program (no PT_INTERP): memflow run
 * cannot preload into it and must say so (tests/run_signals.sh).
 */
#include <stdio.h>

int main(void)
{
    puts("static");
    return 0;
}
