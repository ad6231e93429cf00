/*
 * idmap.c - the sparse id map of idmap.h: a 4096-entry top table, mid
 * tables and 1024-value pages allocated on first use.
 */
#include <stdlib.h>

#include "idmap.h"

#define TOP (1u << 12)
#define MID (1u << 10)
#define PAGE (1u << 10)

int mf_idmap_set(mf_idmap *m, uint32_t id, uint32_t value)
{
    if (!m->mid && !(m->mid = calloc(TOP, sizeof *m->mid)))
        return -1;
    uint32_t ***mid = &m->mid[id >> 20];
    if (!*mid && !(*mid = calloc(MID, sizeof **mid)))
        return -1;
    uint32_t **page = &(*mid)[(id >> 10) & (MID - 1)];
    if (!*page) {
        if (value == 0)
            return 0;
        if (!(*page = calloc(PAGE, sizeof **page)))
            return -1;
        m->pages++;
    }
    (*page)[id & (PAGE - 1)] = value;
    return 0;
}

void mf_idmap_free(mf_idmap *m)
{
    for (size_t t = 0; m->mid && t < TOP; t++) {
        for (size_t i = 0; m->mid[t] && i < MID; i++)
            free(m->mid[t][i]);
        free(m->mid[t]);
    }
    free(m->mid);
    m->mid = NULL;
    m->pages = 0;
}
