/*
 * options.c - option parsing shared by `memflow stats` and `memflow render`.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
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

int cli_parse_time(const char *text, uint64_t *ns)
{
    static const struct { const char *unit; uint64_t scale; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 }, { "", 1 },
    };
    const char *p = text;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (frac_scale < 1000000000) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                frac_scale *= 10;
            }
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].unit) != 0)
            continue;
        if (whole > UINT64_MAX / units[i].scale)
            return -1;
        *ns = whole * units[i].scale + frac * units[i].scale / frac_scale;
        return 0;
    }
    return -1;
}


int cli_parse_percent(const char *text, double *pct)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= 0 && v <= 100))
        return -1;
    *pct = v > 0 ? v : -1;    /* 0: none is small (the options' < 0) */
    return 0;
}

int cli_parse_bound(const char *text, cli_bound *b)
{
    memset(b, 0, sizeof *b);
    if (strncmp(text, "step:", 5) == 0) {
        char *end;
        const char *digits = text + 5;
        if (*digits < '1' || *digits > '9')
            return -1;
        unsigned long long n = strtoull(digits, &end, 10);
        if (*end || n == 0 || n == ULLONG_MAX)
            return -1;
        b->step = n;
        return 0;
    }
    return cli_parse_time(text, &b->ns);
}

int cli_window_options(int argc, char **argv, int *i, cli_load_options *lo, const char *cmd)
{
    const char *arg = argv[*i], *v;
    int from = cli_is_option(arg, "--from");
    if (!from && !cli_is_option(arg, "--to"))
        return 0;
    cli_bound b;
    if (!(v = cli_option_value(argc, argv, i, from ? "--from" : "--to")) ||
        cli_parse_bound(v, &b) < 0) {
        fprintf(stderr, "memflow %s: %s needs a time (ns, or a number with ns, us, ms or s) "
                "or a step (step:N, N >= 1)\n", cmd, from ? "--from" : "--to");
        return -1;
    }
    if (from) {
        lo->from_ns = b.ns;
        lo->from_step = b.step;
    } else if (b.step) {
        lo->to_step = b.step;
    } else {
        lo->until_ns = b.ns;
    }
    return 1;
}

int cli_window_check(const cli_load_options *lo, const char *cmd)
{
    if ((lo->from_step && lo->to_step && lo->to_step < lo->from_step) ||
        (!lo->from_step && !lo->to_step && lo->until_ns != (unsigned long long)-1 &&
         lo->until_ns < lo->from_ns)) {
        fprintf(stderr, "memflow %s: the window ends before it begins (--to before --from)\n",
                cmd);
        return -1;
    }
    return 0;
}
