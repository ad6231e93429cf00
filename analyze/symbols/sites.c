/*
 * sites.c - stack ids to allocation sites (see sites.h).  A stack is read
 * from its log once (mf_reader_stack), its site frame found and named
 * (mf_symbols_site, one mf_symbols per log), and the name looked up among
 * the sites met so far (names are interned in the analysis's string pool;
 * a string id leads to the site id).  The stack's site id is then kept in
 * an array by stack id.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"
#include "sites.h"
#include "symbols.h"

#define UNCOVERED_KEPT 64

/* A log's symboliser and the modules it was opened with. */
typedef struct log_symbols {
    mf_symbols *sym;             /* NULL until the log's first stack */
    size_t modules;              /* MODULE records it knows */
    uint64_t known;              /* their fingerprint (module_fingerprint) */
    uint64_t uncovered[UNCOVERED_KEPT]; /* addresses it resolved outside them */
    size_t n_uncovered;          /* (more than UNCOVERED_KEPT: any address may be) */
} log_symbols;

struct mf_sites {
    mf_reader *reader;
    int own_reader;
    mf_strings *pool;
    log_symbols *symbols;        /* by log */
    size_t n_logs;
    mf_symbols **retired;        /* symbolisers replaced (their texts are in sites) */
    size_t n_retired, cap_retired;
    uint64_t late;               /* see mf_sites_late */
    uint32_t *site_of;           /* by stack id: site id + 1; 0 not yet known */
    size_t n_site_of;
    mf_site *sites;
    size_t n_sites, cap_sites;
    mf_idmap by_name;            /* string id of a site's name -> site id + 1 */
};

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

static const char *intern(mf_sites *s, const char *text)
{
    uint32_t id = mf_strings_intern(s->pool, text, strlen(text));
    return id == MF_STRINGS_FAILED ? NULL : mf_strings_get(s->pool, id);
}

static int add_site(mf_sites *s, const char *name, const mf_site_frame *frame, uint32_t stack,
                    unsigned kind)
{
    if (mf_grow((void **)&s->sites, &s->cap_sites, s->n_sites + 1, sizeof *s->sites) < 0)
        return -1;
    s->sites[s->n_sites++] = (mf_site){ name, *frame, stack, (uint8_t)kind };
    return 0;
}

mf_sites *mf_sites_open(mf_reader *r, mf_strings *pool, int own_reader)
{
    mf_sites *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->reader = r;
    s->pool = pool;
    mf_site_frame none = { 0 };
    if (add_site(s, "(no stack)", &none, 0, MF_SITE_NATIVE) < 0 ||
        add_site(s, "(other sites)", &none, 0, MF_SITE_NATIVE) < 0) {
        mf_sites_close(s);
        return NULL;
    }
    s->own_reader = own_reader;
    return s;
}

void mf_sites_close(mf_sites *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_logs; i++)
        mf_symbols_close(s->symbols[i].sym);
    free(s->symbols);
    for (size_t i = 0; i < s->n_retired; i++)
        mf_symbols_close(s->retired[i]);
    free(s->retired);
    free(s->site_of);
    free(s->sites);
    mf_idmap_free(&s->by_name);
    if (s->own_reader)
        mf_reader_close(s->reader);
    free(s);
}

/* A symboliser that gives way to one that knows more modules: kept (the
 * sites' frames point into it).  What it resolved may differ from what the
 * new one would have (an address no module it knew covered, a warning of
 * its own): counted late.  0, or -1 when out of memory. */
/* Whether one of modules[0..n) covers an address l resolved without a
 * module. */
static int covers_uncovered(const log_symbols *l, const mf_module *modules, size_t n)
{
    if (l->n_uncovered > UNCOVERED_KEPT)
        return 1;
    for (size_t i = 0; i < l->n_uncovered; i++)
        for (size_t k = 0; k < n; k++)
            if (l->uncovered[i] >= modules[k].start && l->uncovered[i] < modules[k].end)
                return 1;
    return 0;
}

/* Remember an address l resolved without a module. */
static void note_uncovered(log_symbols *l, uint64_t ip)
{
    for (size_t i = 0; i < l->n_uncovered && i < UNCOVERED_KEPT; i++)
        if (l->uncovered[i] == ip)
            return;
    if (l->n_uncovered < UNCOVERED_KEPT)
        l->uncovered[l->n_uncovered] = ip;
    if (l->n_uncovered <= UNCOVERED_KEPT)
        l->n_uncovered++;
}

/* Whether two of modules[0..n) overlap (then their order decides which
 * one an address is in). */
static int modules_overlap(const mf_module *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = i + 1; k < n; k++)
            if (m[i].start < m[k].end && m[k].start < m[i].end)
                return 1;
    return 0;
}

static int retire(mf_sites *s, log_symbols *l, const mf_module *modules, size_t n)
{
    if (covers_uncovered(l, modules, n) || mf_symbols_warning(l->sym, 0) ||
        modules_overlap(modules, n))
        s->late++;
    if (mf_grow((void **)&s->retired, &s->cap_retired, s->n_retired + 1, sizeof *s->retired) < 0)
        return -1;
    s->retired[s->n_retired++] = l->sym;
    l->sym = NULL;
    l->n_uncovered = 0;
    return 0;
}

/* A fingerprint of modules[0..n): which modules, in which order. */
static uint64_t module_fingerprint(const mf_module *m, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ m[i].start ^ (m[i].end << 1) ^ (m[i].bias << 2)) * 0xbf58476d1ce4e5b9ull;
    return h;
}

/* Log i's symboliser, opened from its MODULE records on first use; when the
 * log has more of them since (a log read while written), they are added
 * to it, or, when they do not simply follow the ones it knows, it gives
 * way to a new one. */
static mf_symbols *symbols_of(mf_sites *s, uint32_t log)
{
    size_t logs = mf_reader_n_logs(s->reader);
    if (log >= logs)
        return NULL;
    if (logs > s->n_logs) {
        if (mf_grow_filled((void **)&s->symbols, &s->n_logs, logs, sizeof *s->symbols, 0) < 0)
            return NULL;
    }
    log_symbols *l = &s->symbols[log];
    size_t n;
    const mf_module *mods = mf_reader_modules(s->reader, log, &n);
    if (!mods)
        return NULL;
    if (l->sym && n == l->modules)
        return l->sym;
    size_t from = 0;
    if (l->sym && n > l->modules && module_fingerprint(mods, l->modules) == l->known) {
        from = l->modules;     /* new modules after the known ones */
        if (covers_uncovered(l, mods + from, n - from))
            s->late++;         /* an address resolved without them is in them */
    } else if (l->sym && retire(s, l, mods, n) < 0) {
        return NULL;
    }
    mf_symbols_module *rec = calloc(n - from ? n - from : 1, sizeof *rec);
    if (!rec)
        return NULL;
    for (size_t i = from; i < n; i++)
        rec[i - from] = (mf_symbols_module){ mods[i].path, mods[i].bias, mods[i].start,
                                             mods[i].end, mods[i].build_id, mods[i].build_id_len };
    int ok = 1;
    if (from)
        ok = mf_symbols_add(l->sym, rec, n - from) == 0;
    else
        ok = (l->sym = mf_symbols_open(rec, n)) != NULL;
    free(rec);
    if (!ok)
        return NULL;
    l->modules = n;
    l->known = module_fingerprint(mods, n);
    return l->sym;
}

/* A stack's return addresses, its log and the log's symboliser; the
 * depth, or 0. */
static uint32_t read_stack(mf_sites *s, uint32_t stack, uint64_t *ip, uint32_t *log,
                           mf_symbols **sym)
{
    *log = 0;
    int depth = mf_reader_stack(s->reader, stack, log, ip, MF_STACK_MAX_DEPTH);
    if (depth <= 0 || !(*sym = symbols_of(s, *log)))
        return 0;
    return depth < MF_STACK_MAX_DEPTH ? (uint32_t)depth : MF_STACK_MAX_DEPTH;
}

/* The name of an address nothing names: "module.so+0xOFFSET" or "0xADDRESS". */
static const char *unnamed(mf_sites *s, const mf_frame *f)
{
    char buf[4200];
    if (f->module)
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base_name(f->module), f->offset);
    else
        snprintf(buf, sizeof buf, "0x%" PRIx64, f->ip);
    return intern(s, buf);
}

/* The logical frames of one address, innermost first, the first `skip`
 * inlined ones left out; how many (at most max). */
static size_t logical_frames(mf_sites *s, const mf_frame *f, unsigned skip, mf_site_frame *out,
                             size_t max)
{
    size_t n = 0;
    for (unsigned i = skip; i < f->n_inlined && n < max; i++)
        out[n++] = (mf_site_frame){ f->inlined[i].function ? f->inlined[i].function : "?",
                                    f->inlined[i].file, f->inlined[i].line, f->module };
    if (n < max) {
        const char *name = f->function ? f->function : unnamed(s, f);
        out[n++] = (mf_site_frame){ name ? name : "?", f->file, f->line, f->module };
    }
    return n;
}

/* The id of the site named `name` (frame: its frame), added if new. */
static uint32_t site_named(mf_sites *s, const char *name, const mf_site_frame *frame,
                           uint32_t stack, unsigned kind)
{
    uint32_t name_id = mf_strings_intern(s->pool, name, strlen(name));
    if (name_id == MF_STRINGS_FAILED)
        return MF_SITE_OTHER;
    uint32_t known = mf_idmap_get(&s->by_name, name_id);
    if (known)
        return known - 1;
    if (s->n_sites >= MF_SITES_MAX)
        return MF_SITE_OTHER;
    uint32_t id = (uint32_t)s->n_sites;
    if (mf_idmap_set(&s->by_name, name_id, id + 1) < 0 ||
        add_site(s, mf_strings_get(s->pool, name_id), frame, stack, kind) < 0)
        return MF_SITE_OTHER;
    return id;
}

int mf_sites_library_file(const char *file)
{
    if (!file || !*file || strncmp(file, "<frozen ", 8) == 0 || strncmp(file, "<built-in", 9) == 0)
        return 1;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
        strstr(file, "/torch/"))
        return 1;
    for (const char *p = strstr(file, "/python"); p; p = strstr(p + 1, "/python")) {
        /* .../lib/python3.11/..., .../lib64/python3.9/...: the standard library */
        int in_lib = (p - file >= 4 && strncmp(p - 4, "/lib", 4) == 0) ||
                     (p - file >= 6 && strncmp(p - 6, "/lib64", 6) == 0);
        if (in_lib && p[7] >= '0' && p[7] <= '9')
            return 1;
    }
    return 0;
}

int mf_sites_library_function(const char *function, const char *file)
{
    static const char *const prefixes[] = {
        "c10::", "at::", "torch::", "caffe2::", "THP", "pybind11::", "std::", "__gnu_cxx::",
        "_Py", "(anonymous namespace)::", "__libc_start", "_start", "start_thread", "clone",
        "method_vectorcall", "cfunction_", "slot_tp_", "??",
    };
    static const char *const folders[] = { "/c10/", "/aten/", "/torch/", "/pybind11/",
                                           "/Objects/", "/Python/" };
    if (!function || !*function)
        return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(function, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    if (function[0] == 'P' && function[1] == 'y' && (function[2] == '_' ||
                                                     (function[2] >= 'A' && function[2] <= 'Z')))
        return 1;   /* the C API: PyObject_Call, Py_RunMain */
    for (size_t i = 0; file && i < sizeof folders / sizeof folders[0]; i++)
        if (strstr(file, folders[i]))
            return 1;
    return 0;
}

/* The symbolic frame of a stack entry, or NULL for a return address (and
 * for a frame its log never wrote). */
static const mf_symbolic_frame *symbolic(const mf_sites *s, uint64_t entry, int *tagged)
{
    *tagged = mf_stack_entry_is_frame(entry);
    return *tagged ? mf_reader_frame(s->reader, mf_stack_entry_frame(entry)) : NULL;
}

/*
 * The index of the site's frame in ip[0..depth): with Python frames, the
 * first (innermost) in the program's own code (mf_sites_library_file);
 * else the first C/C++ frame known by name outside PyTorch's and the
 * interpreter's internals (mf_sites_library_function); else the innermost
 * Python frame; otherwise the first frame that is no allocator wrapper
 * (mf_symbols_site's rule; a frame known only by name by its function's
 * name).  -1 for an empty stack.
 */
static int site_index(const mf_sites *s, mf_symbols *sym, const uint64_t *ip, uint32_t depth)
{
    int first_python = -1, first_native = -1, tagged;
    for (uint32_t i = 0; i < depth; i++) {
        const mf_symbolic_frame *f = symbolic(s, ip[i], &tagged);
        if (!f)
            continue;
        const char *file = f->file ? mf_strings_get(s->pool, f->file) : NULL;
        if (f->kind != MF_FRAME_PYTHON) {
            const char *function = mf_strings_get(s->pool, f->function);
            if (first_native < 0 && !mf_symbols_allocator_name(function) &&
                !mf_sites_library_function(function, file))
                first_native = (int)i;
            continue;
        }
        if (!mf_sites_library_file(file))
            return (int)i;
        if (first_python < 0)
            first_python = (int)i;
    }
    if (first_native >= 0)
        return first_native;
    if (first_python >= 0)
        return first_python;
    for (uint32_t i = 0; i < depth; i++) {
        const mf_symbolic_frame *f = symbolic(s, ip[i], &tagged);
        if (tagged ? !(f && mf_symbols_allocator_name(mf_strings_get(s->pool, f->function)))
                   : !mf_symbols_wrapper(sym, ip[i]))
            return (int)i;
    }
    return depth ? 0 : -1;
}

/* The logical frames of stack entry ip (an address: its inlined functions
 * too, the first `skip` of them left out; a symbolic frame: itself); how
 * many (at most max). */
static size_t entry_frames(mf_sites *s, mf_symbols *sym, uint64_t ip, int site,
                           mf_site_frame *out, size_t max)
{
    int tagged;
    const mf_symbolic_frame *f = symbolic(s, ip, &tagged);
    if (!tagged)
        return logical_frames(s, mf_symbols_frame(sym, ip),
                              site ? mf_symbols_site_inlined(sym, ip) : 0, out, max);
    if (!max)
        return 0;
    out[0] = (mf_site_frame){ f ? mf_strings_get(s->pool, f->function) : "?",
                              f && f->file ? mf_strings_get(s->pool, f->file) : NULL,
                              f ? f->line : 0, NULL };
    return 1;
}

/* Whether the innermost Python frame of ip[0..depth) is the program's own
 * code (the program itself allocated, not a library it called). */
static int innermost_python_own(const mf_sites *s, const uint64_t *ip, uint32_t depth)
{
    int tagged;
    for (uint32_t i = 0; i < depth; i++) {
        const mf_symbolic_frame *f = symbolic(s, ip[i], &tagged);
        if (f && f->kind == MF_FRAME_PYTHON)
            return !mf_sites_library_file(f->file ? mf_strings_get(s->pool, f->file) : NULL);
    }
    return 0;
}

/* Symbolise stack and find its site (the slow path of mf_sites_of_stack);
 * *own: its innermost Python frame is the program's own code. */
static uint32_t resolve(mf_sites *s, uint32_t stack, int *own)
{
    uint64_t ip[MF_STACK_MAX_DEPTH];
    mf_symbols *sym = NULL;
    uint32_t log, depth = read_stack(s, stack, ip, &log, &sym);
    *own = 0;
    if (!depth)
        return MF_SITE_NONE;
    for (uint32_t i = 0; i < depth; i++)
        if (!mf_stack_entry_is_frame(ip[i]) && !mf_symbols_frame(sym, ip[i])->module)
            note_uncovered(&s->symbols[log], ip[i]);
    *own = innermost_python_own(s, ip, depth);
    int at = site_index(s, sym, ip, depth);
    mf_site_frame frame;
    if (at < 0 || !entry_frames(s, sym, ip[at], 1, &frame, 1))
        return MF_SITE_NONE;
    char name[4300];
    if (frame.file && frame.line)
        snprintf(name, sizeof name, "%s (%s:%u)", frame.function, base_name(frame.file),
                 frame.line);
    else
        snprintf(name, sizeof name, "%s", frame.function);
    int tagged;
    const mf_symbolic_frame *f = symbolic(s, ip[at], &tagged);
    unsigned kind = !f || f->kind != MF_FRAME_PYTHON ? MF_SITE_NATIVE
                    : mf_sites_library_file(frame.file) ? MF_SITE_PYTHON_LIBRARY
                                                         : MF_SITE_PYTHON_OWN;
    return site_named(s, name, &frame, stack, kind);
}

#define OWN_BIT 0x80000000u   /* in site_of: the stack's innermost Python frame is own code */

/* site_of's entry of stack (site + 1, OWN_BIT), resolving it the first
 * time; 0 when out of memory. */
static uint32_t entry_of(mf_sites *s, uint32_t stack)
{
    if (stack < s->n_site_of && s->site_of[stack])
        return s->site_of[stack];
    if (mf_grow_filled((void **)&s->site_of, &s->n_site_of, (size_t)stack + 1,
                       sizeof *s->site_of, 0) < 0)
        return 0;
    int own;
    uint32_t site = resolve(s, stack, &own);
    s->site_of[stack] = (site + 1) | (own ? OWN_BIT : 0);
    return s->site_of[stack];
}

uint32_t mf_sites_of_stack(mf_sites *s, uint32_t stack)
{
    if (stack == 0)
        return MF_SITE_NONE;
    uint32_t e = entry_of(s, stack);
    return e ? (e & ~OWN_BIT) - 1 : MF_SITE_OTHER;
}

int mf_sites_stack_own(mf_sites *s, uint32_t stack)
{
    return stack && (entry_of(s, stack) & OWN_BIT) != 0;
}

uint32_t mf_sites_count(const mf_sites *s)
{
    return (uint32_t)s->n_sites;
}

const mf_site *mf_sites_get(const mf_sites *s, uint32_t site)
{
    return &s->sites[site < s->n_sites ? site : MF_SITE_OTHER];
}

size_t mf_sites_frames(mf_sites *s, uint32_t stack, mf_site_frame *out, size_t max)
{
    uint64_t ip[MF_STACK_MAX_DEPTH];
    mf_symbols *sym = NULL;
    uint32_t log, depth = stack ? read_stack(s, stack, ip, &log, &sym) : 0;
    if (!depth)
        return 0;
    int at = site_index(s, sym, ip, depth);
    uint32_t first = at < 0 ? 0 : (uint32_t)at;
    size_t n = 0;
    for (uint32_t i = first; i < depth && n < max; i++)
        n += entry_frames(s, sym, ip[i], i == first, out + n, max - n);
    return n;
}

const char *mf_sites_warning(const mf_sites *s, size_t i)
{
    for (size_t log = 0; log < s->n_logs; log++) {
        mf_symbols *sym = s->symbols[log].sym;
        if (!sym)
            continue;
        size_t n = 0;
        while (mf_symbols_warning(sym, n))
            n++;
        if (i < n)
            return mf_symbols_warning(sym, i);
        i -= n;
    }
    return NULL;
}

uint64_t mf_sites_late(const mf_sites *s)
{
    return s->late;
}
