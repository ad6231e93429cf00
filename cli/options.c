/*
 * options.c - option parsing shared by `memflow stats` and `memflow render`.
 */
#include <stdio.h>
#include <string.h>

#include "options.h"

int cli_is_option(const char *arg, const char *opt)
{
    size_t n = strlen(opt);
    return strncmp(arg, opt, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

const char *cli_option_value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) == 0 && argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (strcmp(argv[*i], opt) == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

void cli_folder_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}
