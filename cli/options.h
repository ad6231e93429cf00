/*
 * options.h - the option parsing shared by the subcommands: "--opt VALUE"
 * and "--opt=VALUE" both work.
 */
#ifndef MEMFLOW_CLI_OPTIONS_H
#define MEMFLOW_CLI_OPTIONS_H

/* Whether arg is the option opt, alone or as "opt=VALUE". */
int cli_is_option(const char *arg, const char *opt);

/*
 * The value of option opt at argv[*i]: the text after "opt=", or the next
 * argument (then *i moves past it).  NULL when the value is missing.
 */
const char *cli_option_value(int argc, char **argv, int *i, const char *opt);

#endif
