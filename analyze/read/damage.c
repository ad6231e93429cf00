/*
 * damage.c - the damage list of a log (see damage.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "damage.h"

void mf_damage_add_line(mf_damage *d, const char *line)
{
    char *copy = d->n < MF_DAMAGE_KEPT ? strdup(line) : NULL;
    if (copy)
        d->lines[d->n++] = copy;
    else
        d->more++;
}

void mf_damage_add(mf_damage *d, const char *path, uint64_t offset, const char *fmt, ...)
{
    if (d->n == MF_DAMAGE_KEPT) {
        d->more++;
        return;
    }
    char what[512], line[1024 + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "%s: offset %llu: %s", path, (unsigned long long)offset, what);
    mf_damage_add_line(d, line);
}

const char *mf_damage_first(const mf_damage *d)
{
    return d->n ? d->lines[0] : "";
}

void mf_damage_free(mf_damage *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->lines[i]);
    memset(d, 0, sizeof *d);
}
