/* cli/cmd_render.c - placeholder so the tree links until the render work lands it. */
#include <stdio.h>
#include "commands.h"
int cmd_render(int argc, char **argv)
{
    (void)argc; (void)argv;
    fputs("memflow render: not built yet\n", stderr);
    return 1;
}
