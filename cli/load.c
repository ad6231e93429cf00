/* cli/load.c - placeholder so the tree links until the render work lands it. */
#include <stdio.h>
#include "commands.h"
struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns)
{
    (void)n; (void)paths; (void)until_ns;
    fputs("memflow: reading logs is not built yet\n", stderr);
    return NULL;
}
