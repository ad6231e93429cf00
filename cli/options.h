/*
 * options.h - the argument handling shared by the subcommands: options
 * ("--opt VALUE" and "--opt=VALUE" both work) and the folders of paths.
 */
#ifndef MEMFLOW_CLI_OPTIONS_H
#define MEMFLOW_CLI_OPTIONS_H

#include <stddef.h>

/* Whether arg is the option opt, alone or as "opt=VALUE". */
int cli_is_option(const char *arg, const char *opt);

/*
 * The value of option opt at argv[*i]: the text after "opt=", or the next
 * argument (then *i moves past it).  NULL when the value is missing.
 */
const char *cli_option_value(int argc, char **argv, int *i, const char *opt);

/* The folder that holds path, in buf: "." when path has no slash, "/" for
 * a file at the root (truncated to len). */
void cli_folder_of(const char *path, char *buf, size_t len);

#endif
