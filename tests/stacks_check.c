/*
 * stacks_check.c - the allocations of a log per call site, symbolised, for
 * the call-stack tests (and a quick look at a log by hand).
 *
 * Reads LOG with the reader, symbolises every recorded stack with
 * analyze/symbols/symbols.c, and prints one line per allocation site, sorted:
 *
 *   SITE allocs=N bytes=N
 *
 * SITE is the site frame's logical chain, innermost first, joined by " < "
 * ("inline_buffer < fill_inline" for an inlined function), or
 * MODULE+0xOFFSET where no symbol names the code; "(no stack)" for
 * allocations without one.  bytes are requested bytes.  Then
 * "total allocs=N with_stack=N stacks=N modules=N" and one "warning: ..."
 * line per module that could not be read.
 *
 * Usage: stacks_check [--where] [--full] [--paths] [--events] LOG
 *   --where  append " @FILE:LINE" (file base name) of the innermost frame
 *   --full   print the whole stack of each site's first allocation below it
 *   --paths  one line per distinct stack instead of per site: every frame
 *            from the innermost to main, "f < g < main"; a path printed
 *            twice is one stack recorded under two ids
 *   --events instead, print the log's TRACE records (NVTX ranges, marks,
 *            names of NVTX memory regions: id = the region's address) as
 *            "KIND id=N name=NAME domain=DOMAIN thread=THREAD" and its NOTE
 *            records as "note CODE value=N", in time order
 * Exit status: 0, 1 if the log cannot be read, 3 if it is damaged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_in_memory.h"
#include "symbols.h"

typedef struct site {
    char *name;
    uint64_t allocs, bytes;
    uint32_t first_stack;
} site;

static site *sites;
static size_t n_sites;

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

/* "f < g < main" for a whole stack, up to main (inclusive); malloc'd. */
static char *path_of(mf_symbols *sym, const mf_stack *st)
{
    size_t len = 0;
    char *out = calloc(1, 1);
    for (uint32_t i = 0; i < st->depth && out; i++) {
        const mf_frame *f = mf_symbols_frame(sym, st->ip[i]);
        const char *name = f->n_inlined ? f->function : mf_symbols_name(sym, f);
        name = name ? name : "?";
        char *grown = realloc(out, len + strlen(name) + 4);
        if (!grown) {
            free(out);
            return NULL;
        }
        out = grown;
        len += (size_t)sprintf(out + len, "%s%s", i ? " < " : "", name);
        if (strcmp(name, "main") == 0)
            break;
    }
    return out;
}

/* "inner < outer" for the logical frames of one address; malloc'd. */
static char *chain(mf_symbols *sym, const mf_frame *f, int where)
{
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    for (unsigned i = 0; i <= f->n_inlined && out; i++) {
        const char *name = i < f->n_inlined ? f->inlined[i].function : NULL;
        if (i == f->n_inlined)
            name = f->n_inlined ? f->function : mf_symbols_name(sym, f);
        if (!name)
            name = "?";
        size_t need = len + strlen(name) + 4;
        if (need > cap && !(out = realloc(out, cap = need * 2)))
            return NULL;
        len += (size_t)sprintf(out + len, "%s%s", i ? " < " : "", name);
    }
    if (out && where) {
        const char *file = f->n_inlined ? f->inlined[0].file : f->file;
        unsigned line = f->n_inlined ? f->inlined[0].line : f->line;
        size_t need = len + (file ? strlen(file) : 1) + 32;
        if (need > cap && !(out = realloc(out, need)))
            return NULL;
        sprintf(out + len, " @%s:%u", file ? base_name(file) : "?", line);
    }
    return out;
}

static site *site_named(char *name, uint32_t stack, int by_stack)
{
    for (size_t i = 0; i < n_sites; i++)
        if (by_stack ? sites[i].first_stack == stack : strcmp(sites[i].name, name) == 0) {
            free(name);
            return &sites[i];
        }
    sites = realloc(sites, (n_sites + 1) * sizeof *sites);
    sites[n_sites] = (site){ name, 0, 0, stack };
    return &sites[n_sites++];
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const site *)a)->name, ((const site *)b)->name);
}

static void print_stack(mf_symbols *sym, const mf_stack *st, int where)
{
    for (uint32_t i = 0; i < st->depth; i++) {
        char *c = chain(sym, mf_symbols_frame(sym, st->ip[i]), where);
        printf("    #%u %s\n", i, c ? c : "?");
        free(c);
    }
}

static const char *thread_of(const mf_log *log, uint32_t tid)
{
    const char *name = mf_log_thread_name(log, tid);
    return name ? name : "?";
}

static void print_events(const mf_log *log)
{
    static const char *const kinds[] = {
        [MF_TRACE_MARKER] = "marker", [MF_TRACE_RANGE_BEGIN] = "range_begin",
        [MF_TRACE_RANGE_END] = "range_end", [MF_TRACE_REGION_NAME] = "region_name",
    };
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type == MF_REC_NOTE) {
            printf("note %u value=%" PRIu64 "\n", e->note.code, e->note.value);
            continue;
        }
        if (e->type != MF_REC_TRACE)
            continue;
        const mf_ev_trace *t = &e->trace;
        const char *kind = t->kind < sizeof kinds / sizeof kinds[0] && kinds[t->kind]
                               ? kinds[t->kind] : "trace";
        printf("%s id=%" PRIu64 " name=%s", kind, t->value,
               t->name ? mf_log_string(log, t->name) : "-");
        printf(" domain=%s", t->domain ? mf_log_string(log, t->domain) : "-");
        printf(" thread=%s\n", thread_of(log, e->tid));
    }
}

int main(int argc, char **argv)
{
    int where = 0, full = 0, events = 0, paths = 0, a = 1;
    for (; a < argc - 1; a++) {
        if (strcmp(argv[a], "--where") == 0)
            where = 1;
        else if (strcmp(argv[a], "--full") == 0)
            full = 1;
        else if (strcmp(argv[a], "--events") == 0)
            events = 1;
        else if (strcmp(argv[a], "--paths") == 0)
            paths = 1;
        else
            break;
    }
    if (a != argc - 1) {
        fprintf(stderr, "usage: stacks_check [--where] [--full] [--paths] [--events] LOG\n");
        return 2;
    }
    mf_log *log;
    char err[512];
    int rc = mf_log_read(argv[a], &log, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (events) {
        print_events(log);
        mf_log_free(log);
        return rc == 1 ? 3 : 0;
    }
    mf_symbols_module *mods = calloc(log->n_modules + 1, sizeof *mods);
    for (size_t i = 0; i < log->n_modules; i++) {
        const mf_module *m = &log->modules[i];
        mods[i] = (mf_symbols_module){ m->path, m->bias, m->start, m->end,
                                       m->build_id, m->build_id_len };
        mods[i].path = strdup(mods[i].path);
    }
    mf_symbols *sym = mf_symbols_open(mods, log->n_modules);
    uint64_t allocs = 0, with_stack = 0;
    uint32_t stacks = 0;
    for (uint32_t id = 1; id < log->n_stacks; id++)
        stacks += log->stacks[id].depth != 0;
    for (size_t i = 0; i < log->n_events; i++) {
        const mf_event *e = &log->events[i];
        if (e->type != MF_REC_ALLOC)
            continue;
        allocs++;
        const mf_stack *st = mf_log_stack(log, e->alloc.stack);
        char *name = NULL;
        if (st) {
            with_stack++;
            int at = mf_symbols_site(sym, st->ip, st->depth);
            name = paths ? path_of(sym, st) : chain(sym, mf_symbols_frame(sym, st->ip[at]), where);
        }
        site *s = site_named(name ? name : strdup("(no stack)"), st ? e->alloc.stack : 0, paths);
        s->allocs++;
        s->bytes += e->alloc.requested;
    }
    qsort(sites, n_sites, sizeof *sites, by_name);
    for (size_t i = 0; i < n_sites; i++) {
        printf("%s allocs=%" PRIu64 " bytes=%" PRIu64 "\n", sites[i].name, sites[i].allocs,
               sites[i].bytes);
        if (full && sites[i].first_stack)
            print_stack(sym, mf_log_stack(log, sites[i].first_stack), where);
    }
    printf("total allocs=%" PRIu64 " with_stack=%" PRIu64 " stacks=%u modules=%zu\n", allocs,
           with_stack, stacks, log->n_modules);
    for (size_t i = 0; mf_symbols_warning(sym, i); i++)
        printf("warning: %s\n", mf_symbols_warning(sym, i));
    if (log->damaged)
        printf("damage: %s\n", log->damage);
    mf_symbols_close(sym);
    for (size_t i = 0; i < log->n_modules; i++)
        free((char *)mods[i].path);
    free(mods);
    for (size_t i = 0; i < n_sites; i++)
        free(sites[i].name);
    free(sites);
    mf_log_free(log);
    return rc == 1 ? 3 : 0;
}
