/*
 * symbols.c - addresses of recorded stacks to functions, files and lines
 * (see symbols.h), through elfutils libdwfl.
 *
 * Each recorded module gets its own Dwfl session holding that one file,
 * placed at the recorded load bias, opened on the first address that falls
 * in it after its build id was checked against the recorded one.  (One
 * session per module keeps modules that replaced each other at the same
 * addresses apart.)  An address is looked up at ip - 1: a return address
 * points after its call, possibly into the next line or function.  The
 * DWARF scopes at that address give the inlined functions (innermost first)
 * and, through DW_AT_call_file/line, where each was inlined; the symbol
 * table answers when there is no DWARF; a stripped module without a symbol
 * for the address leaves the frame as module+offset.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "symbols.h"

/* libstdc++'s demangler (the Itanium C++ ABI's __cxa_demangle). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

enum module_state { MODULE_UNREAD, MODULE_READ, MODULE_UNREADABLE };

typedef struct sym_module {
    mf_symbols_module rec;
    char *path;
    uint8_t build_id[64];
    Dwfl *dwfl;
    Dwfl_Module *mod;
    int state;
} sym_module;

typedef struct cached {
    uint64_t ip;               /* 0: empty slot */
    mf_frame *frame;
} cached;

struct mf_symbols {
    sym_module *modules;
    size_t n_modules;
    cached *cache;
    size_t cache_size, cache_used;
    char **strings;            /* everything handed out, freed at close */
    size_t n_strings, cap_strings;
    char **warnings;
    size_t n_warnings, cap_warnings;
};

static char *keep(mf_symbols *s, char *text)
{
    if (!text || mf_grow((void **)&s->strings, &s->cap_strings, s->n_strings + 1,
                         sizeof(char *)) < 0) {
        free(text);
        return NULL;
    }
    s->strings[s->n_strings++] = text;
    return text;
}

static char *keep_copy(mf_symbols *s, const char *text)
{
    return text ? keep(s, strdup(text)) : NULL;
}

static void warn(mf_symbols *s, const char *fmt, const char *path, const char *what)
{
    char *msg = malloc(strlen(path) + strlen(what) + 128);
    if (!msg || mf_grow((void **)&s->warnings, &s->cap_warnings, s->n_warnings + 1,
                        sizeof(char *)) < 0) {
        free(msg);
        return;
    }
    sprintf(msg, fmt, path, what);
    s->warnings[s->n_warnings++] = msg;
}

/* ---- modules ---------------------------------------------------------------- */

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static void hex(const uint8_t *bytes, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", bytes[i]);
    out[2 * n] = 0;
}

/* Whether the file's build id is the recorded one; warns when not. */
static int build_id_matches(mf_symbols *s, sym_module *m, int fd)
{
    if (!m->rec.build_id_len)
        return 1; /* nothing recorded to check against */
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *id = NULL;
    ssize_t len = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
    size_t n = m->rec.build_id_len;
    int same = len >= (ssize_t)n && memcmp(id, m->rec.build_id, n) == 0;
    if (!same) {
        char want[2 * 64 + 1], got[2 * 64 + 1] = "none";
        hex(m->rec.build_id, n, want);
        if (len > 0)
            hex(id, (size_t)len < 64 ? (size_t)len : 64, got);
        char what[300];
        snprintf(what, sizeof what, "build id %s on disk, %s when recorded", got, want);
        warn(s, "%s: %s (rebuilt since the run?): its frames are shown as module+offset",
             m->path, what);
    }
    if (elf)
        elf_end(elf);
    return same;
}

/* Open the module's file into a Dwfl session of its own. */
static void read_module(mf_symbols *s, sym_module *m)
{
    m->state = MODULE_UNREADABLE;
    int fd = open(m->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        warn(s, "%s: %s: its frames are shown as module+offset", m->path,
             "cannot open the file");
        return;
    }
    int same = build_id_matches(s, m, fd);
    close(fd);
    if (!same || !(m->dwfl = dwfl_begin(&callbacks)))
        return;
    dwfl_report_begin(m->dwfl);
    m->mod = dwfl_report_elf(m->dwfl, m->path, m->path, -1, m->rec.bias, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod) {
        warn(s, "%s: %s: its frames are shown as module+offset", m->path, dwfl_errmsg(-1));
        return;
    }
    m->state = MODULE_READ;
}

static sym_module *module_of(mf_symbols *s, uint64_t ip)
{
    for (size_t i = s->n_modules; i-- > 0;) {
        sym_module *m = &s->modules[i];
        if (ip >= m->rec.start && ip < m->rec.end)
            return m;
    }
    return NULL;
}

/* ---- names, files and lines ---------------------------------------------------- */

static char *demangle(mf_symbols *s, const char *name)
{
    if (!name)
        return NULL;
    int status = -1;
    char *out = strncmp(name, "_Z", 2) == 0 ? __cxa_demangle(name, NULL, NULL, &status) : NULL;
    return status == 0 && out ? keep(s, out) : keep_copy(s, name);
}

/* The name of a subprogram or inlined subroutine DIE (through its origin). */
static char *die_function(mf_symbols *s, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    return demangle(s, name);
}

/* Where an inlined subroutine was called from (DW_AT_call_file/line). */
static void call_site(mf_symbols *s, Dwarf_Die *cu, Dwarf_Die *die, const char **file,
                      unsigned *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word index = 0, lineno = 0;
    Dwarf_Files *files;
    size_t n_files;
    *file = NULL;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &lineno) == 0)
        *line = (unsigned)lineno;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &index) == 0 &&
        dwarf_getsrcfiles(cu, &files, &n_files) == 0 && index < n_files)
        *file = keep_copy(s, dwarf_filesrc(files, index, NULL, NULL));
}

static int is_function(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/* The innermost function scope around pc (an inlined subroutine or the
 * subprogram), copied into *out.  0 if there is none. */
static int innermost_function(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes(cu, pc, &scopes), found = 0;
    for (int i = 0; i < n && !found; i++)
        if (is_function(&scopes[i])) {
            *out = scopes[i];
            found = 1;
        }
    free(scopes);
    return found;
}

/* The function scope that contains die in the concrete tree (where an
 * inlined subroutine was inlined).  0 if there is none. */
static int enclosing_function(Dwarf_Die *die, Dwarf_Die *out)
{
    Dwarf_Die *scopes = NULL;
    int n = dwarf_getscopes_die(die, &scopes), found = 0;
    for (int i = 1; i < n && !found; i++)
        if (is_function(&scopes[i])) {
            *out = scopes[i];
            found = 1;
        }
    free(scopes);
    return found;
}

/*
 * Fill f from the DWARF at pc: the inlined functions innermost first (each
 * with the line the address is at in it), then the out-of-line function
 * with the line of the call of the outermost inlined one.  Returns 0 if
 * there is no DWARF for pc.
 */
static int from_dwarf(mf_symbols *s, Dwfl_Module *mod, uint64_t pc, mf_frame *f)
{
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    Dwarf_Die die;
    if (!cu || !innermost_function(cu, pc - bias, &die))
        return 0;
    const char *file = NULL;
    int lineno = 0;
    Dwfl_Line *line = dwfl_module_getsrc(mod, pc);
    if (line)
        file = keep_copy(s, dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL));
    unsigned at_line = lineno > 0 ? (unsigned)lineno : 0, n_inl = 0;
    size_t cap = 0;
    mf_inline_frame *inl = NULL;
    while (dwarf_tag(&die) == DW_TAG_inlined_subroutine) {
        if (mf_grow((void **)&inl, &cap, n_inl + 1, sizeof *inl) < 0)
            break;
        inl[n_inl++] = (mf_inline_frame){ die_function(s, &die), file, at_line };
        call_site(s, cu, &die, &file, &at_line);
        Dwarf_Die outer;
        if (!enclosing_function(&die, &outer))
            break;
        die = outer;
    }
    if (dwarf_tag(&die) == DW_TAG_subprogram)
        f->function = die_function(s, &die);
    f->file = file;
    f->line = at_line;
    if (n_inl && keep(s, (char *)inl)) {
        f->inlined = inl;
        f->n_inlined = n_inl;
    } else {
        free(inl);
    }
    return 1;
}

static mf_frame *lookup(mf_symbols *s, uint64_t ip)
{
    mf_frame *f = calloc(1, sizeof *f);
    if (!f || !keep(s, (char *)f)) {
        static mf_frame none;
        return &none;
    }
    f->ip = ip;
    sym_module *m = module_of(s, ip);
    if (!m)
        return f;
    f->module = m->path;
    f->offset = ip - m->rec.bias;
    if (m->state == MODULE_UNREAD)
        read_module(s, m);
    if (m->state != MODULE_READ)
        return f;
    f->module_read = 1;
    uint64_t pc = ip ? ip - 1 : 0;
    if (!from_dwarf(s, m->mod, pc, f) || !f->function) {
        GElf_Off off;
        GElf_Sym sym;
        const char *name = dwfl_module_addrinfo(m->mod, pc, &off, &sym, NULL, NULL, NULL);
        if (name)
            f->function = demangle(s, name);
    }
    return f;
}

/* ---- the cache -------------------------------------------------------------- */

static size_t slot_of(const mf_symbols *s, uint64_t ip)
{
    size_t i = (size_t)((ip >> 2) * 0x9e3779b97f4a7c15ull) & (s->cache_size - 1);
    while (s->cache[i].ip && s->cache[i].ip != ip)
        i = (i + 1) & (s->cache_size - 1);
    return i;
}

static int grow_cache(mf_symbols *s)
{
    size_t size = s->cache_size ? s->cache_size * 2 : 1024;
    cached *old = s->cache;
    size_t old_size = s->cache_size;
    s->cache = calloc(size, sizeof *s->cache);
    if (!s->cache) {
        s->cache = old;
        return -1;
    }
    s->cache_size = size;
    for (size_t i = 0; i < old_size; i++)
        if (old[i].ip)
            s->cache[slot_of(s, old[i].ip)] = old[i];
    free(old);
    return 0;
}

const mf_frame *mf_symbols_frame(mf_symbols *s, uint64_t ip)
{
    if (ip == 0 || ((s->cache_used + 1) * 2 > s->cache_size && grow_cache(s) < 0))
        return lookup(s, ip); /* not cached: 0, or out of memory */
    size_t i = slot_of(s, ip);
    if (!s->cache[i].ip) {
        s->cache[i] = (cached){ ip, lookup(s, ip) };
        s->cache_used++;
    }
    return s->cache[i].frame;
}

/* ---- names and sites ------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

const char *mf_symbols_name(mf_symbols *s, const mf_frame *f)
{
    if (f->n_inlined)
        return f->inlined[0].function ? f->inlined[0].function : "?";
    if (f->function)
        return f->function;
    char buf[4200];
    if (f->module)
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, base_name(f->module), f->offset);
    else
        snprintf(buf, sizeof buf, "0x%" PRIx64, f->ip);
    const char *kept = keep_copy(s, buf);
    return kept ? kept : "?";
}

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Modules that allocate only for their caller. */
static int wrapper_module(const char *path)
{
    static const char *const prefixes[] = {
        "libmemflow", "libjemalloc", "libc.so", "libc-", "ld-linux", "ld-",
        "libcuda.so", "libcudart", "libcupti",
    };
    const char *base = base_name(path);
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (has_prefix(base, prefixes[i]))
            return 1;
    return 0;
}

/* Allocation entry points, wherever they are linked (cudart is often static). */
static int wrapper_function(const char *name)
{
    static const char *const exact[] = {
        "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
        "aligned_alloc", "memalign", "valloc", "pvalloc",
    };
    static const char *const prefixes[] = {
        "operator new", "operator delete", "cudaMalloc", "cudaHostAlloc", "cuMem",
        "cudart::", "nvtxMem",   /* the NVTX memory API: regions (sub-blocks) */
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(name, exact[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (has_prefix(name, prefixes[i]))
            return 1;
    return 0;
}

int mf_symbols_allocator_name(const char *function)
{
    return function && wrapper_function(function);
}

int mf_symbols_wrapper(mf_symbols *s, uint64_t ip)
{
    const mf_frame *f = mf_symbols_frame(s, ip);
    return (f->module && wrapper_module(f->module)) ||
           (f->function && wrapper_function(f->function));
}

int mf_symbols_site(mf_symbols *s, const uint64_t *ip, uint32_t depth)
{
    if (depth == 0)
        return -1;
    for (uint32_t i = 0; i < depth; i++)
        if (!mf_symbols_wrapper(s, ip[i]))
            return (int)i;
    return 0;
}

unsigned mf_symbols_site_inlined(mf_symbols *s, uint64_t ip)
{
    const mf_frame *f = mf_symbols_frame(s, ip);
    unsigned n = 0;
    while (n < f->n_inlined && f->inlined[n].function && wrapper_function(f->inlined[n].function))
        n++;
    return n;
}

/* ---- life cycle --------------------------------------------------------------- */

int mf_symbols_add(mf_symbols *s, const mf_symbols_module *modules, size_t n)
{
    sym_module *grown = realloc(s->modules, (s->n_modules + n + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->modules = grown;
    for (size_t i = 0; i < n; i++) {
        sym_module *m = &s->modules[s->n_modules];
        memset(m, 0, sizeof *m);
        m->rec = modules[i];
        m->path = strdup(modules[i].path ? modules[i].path : "?");
        if (!m->path)
            return -1;
        size_t len = modules[i].build_id ? modules[i].build_id_len : 0;
        m->rec.build_id_len = (uint32_t)(len < sizeof m->build_id ? len : sizeof m->build_id);
        if (len)
            memcpy(m->build_id, modules[i].build_id, m->rec.build_id_len);
        m->rec.build_id = m->build_id;
        m->rec.path = m->path;
        s->n_modules++;
    }
    return 0;
}

mf_symbols *mf_symbols_open(const mf_symbols_module *modules, size_t n)
{
    elf_version(EV_CURRENT);
    mf_symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (mf_symbols_add(s, modules, n) < 0) {
        mf_symbols_close(s);
        return NULL;
    }
    return s;
}

void mf_symbols_close(mf_symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_modules; i++) {
        if (s->modules[i].dwfl)
            dwfl_end(s->modules[i].dwfl);
        free(s->modules[i].path);
    }
    free(s->modules);
    free(s->cache);
    for (size_t i = 0; i < s->n_strings; i++)
        free(s->strings[i]);
    free(s->strings);
    for (size_t i = 0; i < s->n_warnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    free(s);
}

const char *mf_symbols_warning(const mf_symbols *s, size_t i)
{
    return i < s->n_warnings ? s->warnings[i] : NULL;
}
