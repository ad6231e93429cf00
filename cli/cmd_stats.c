/* cli/cmd_stats.c - placeholder so the tree links until the render work lands it. */
#include <stdio.h>
#include "commands.h"
int cmd_stats(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("memflow stats: not built yet\n", stderr);
    return 1;
}
