/*
 * index_file.c - the view index's file (docs/FORMAT.md "The view index"):
 * pieces appended as the builder writes them (columns of cells and buckets
 * of blocks, both as varints; pages of occupancy), and, once the logs are
 * finished, a
 * directory at the end (with each view's legends and OOMs) and a header at
 * the start that say where each piece is and which logs (path, size,
 * mtime, run id) it indexes.  Loading
 * checks every count and offset against the file before trusting it: a
 * damaged or foreign file is rebuilt, never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow.h"
#include "index_state.h"

#define IX_MAGIC "MFINDEX\0"
#define IX_HEADER_BYTES 4096      /* the header's room; pieces start after it */

typedef struct ix_file_header {
    char magic[8];
    uint32_t version, header_size;
    uint32_t n_logs, n_views;
    uint32_t wshift, levels;
    int32_t cell_level;
    uint32_t reserved;
    uint64_t t0, t1;
    uint64_t dir_offset, dir_bytes;
} ix_file_header;

void ix_warn(mf_index *ix, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *copy = strdup(line);
    char **w = realloc(ix->warnings, (ix->n_warnings + 1) * sizeof *w);
    if (!copy || !w) {
        free(copy);
        if (w)
            ix->warnings = w;
        return;
    }
    ix->warnings = w;
    ix->warnings[ix->n_warnings++] = copy;
}

int ix_write(mf_index *ix, const void *bytes, size_t n, uint64_t *offset)
{
    if (ix->end < IX_HEADER_BYTES)
        ix->end = IX_HEADER_BYTES;
    *offset = ix->end;
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(ix->fd, (const char *)bytes + done, n - done,
                           (off_t)(ix->end + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    ix->end += n;
    return 0;
}

int ix_read(mf_index *ix, uint64_t offset, void *out, size_t n, char *err, size_t errlen)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = pread(ix->fd, (char *)out + done, n - done, (off_t)(offset + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "%s: cannot read the index at offset %llu: %s",
                     ix->path[0] ? ix->path : "index", (unsigned long long)(offset + done),
                     r < 0 ? strerror(errno) : "end of file");
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

/* A new entry (addresses: all); NULL when out of memory. */
ix_dirent *ix_dir_add(ix_dir *d, uint64_t key, uint64_t offset, uint64_t bytes,
                      uint64_t count, uint64_t aux)
{
    if (mf_grow((void **)&d->e, &d->cap, d->n + 1, sizeof *d->e) < 0)
        return NULL;
    d->e[d->n] = (ix_dirent){ .key = key, .offset = offset, .bytes = bytes, .count = count,
                              .aux = aux, .lo = 0, .hi = UINT64_MAX };
    return &d->e[d->n++];
}

/* The first entry of d whose key is >= key. */
size_t ix_dir_lower(const ix_dir *d, uint64_t key)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->e[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ix_out_room(ix_out *o, size_t more)
{
    if (o->bad || mf_grow((void **)&o->p, &o->cap, o->n + more, 1) < 0) {
        o->bad = 1;
        return -1;
    }
    return 0;
}

/* The bytes of piece e, read into ix's buffer, to decode through in. */
int ix_read_piece(mf_index *ix, const ix_dirent *e, ix_in *in, char *err, size_t errlen)
{
    if (mf_grow((void **)&ix->buf, &ix->cap_buf, e->bytes ? e->bytes : 1, 1) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (ix_read(ix, e->offset, ix->buf, e->bytes, err, errlen) < 0)
        return -1;
    *in = (ix_in){ .p = ix->buf, .n = e->bytes };
    return 0;
}

/* ---- the directory: a byte buffer written and read field by field --------------------- */

typedef struct ix_buf {
    unsigned char *p;
    size_t n, cap, at;
    int bad;
} ix_buf;

static void put(ix_buf *b, const void *bytes, size_t n)
{
    if (b->bad || mf_grow((void **)&b->p, &b->cap, b->n + n, 1) < 0) {
        b->bad = 1;
        return;
    }
    memcpy(b->p + b->n, bytes, n);
    b->n += n;
}

static void put64(ix_buf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

static int get(ix_buf *b, void *out, size_t n)
{
    if (b->bad || b->n - b->at < n) {
        b->bad = 1;
        memset(out, 0, n);
        return -1;
    }
    memcpy(out, b->p + b->at, n);
    b->at += n;
    return 0;
}

static uint64_t get64(ix_buf *b)
{
    uint64_t v;
    get(b, &v, sizeof v);
    return v;
}

/* A count of items of size bytes that the rest of the buffer can hold. */
static size_t get_count(ix_buf *b, size_t size)
{
    uint64_t n = get64(b);
    if (n > (b->n - b->at) / size) {
        b->bad = 1;
        return 0;
    }
    return (size_t)n;
}

static int by_key(const void *pa, const void *pb)
{
    const ix_dirent *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static void put_dir(ix_buf *b, const ix_dir *d)
{
    put64(b, d->n);
    put(b, d->e, d->n * sizeof *d->e);
}

/* A directory read back: sorted by key (ranges of keys apart, unless
 * shared: buckets written twice), every piece inside the file, each
 * holding at most one item per min_item bytes. */
static void get_dir(ix_buf *b, ix_dir *d, uint64_t file_end, size_t min_item, int shared)
{
    d->n = get_count(b, sizeof *d->e);
    if (b->bad || !d->n)
        return;
    d->e = malloc(d->n * sizeof *d->e);
    if (!d->e) {
        b->bad = 1;
        return;
    }
    d->cap = d->n;
    get(b, d->e, d->n * sizeof *d->e);
    for (size_t i = 0; i < d->n && !b->bad; i++) {
        const ix_dirent *e = &d->e[i];
        if (e->offset < IX_HEADER_BYTES || e->offset > file_end || e->lo > e->hi ||
            e->bytes > file_end - e->offset || e->count > e->bytes / min_item ||
            (i && e->key + (shared ? 1 : 0) <= d->e[i - 1].key + (d->e[i - 1].aux >> 8)))
            b->bad = 1;
    }
}

/* What identifies a log: its real path, size, mtime and the run id of its
 * file header (read from the file: a reused index opens no reader). */
static void put_log(ix_buf *b, const char *path)
{
    char real[PATH_MAX];
    struct stat st;
    mf_file_header h;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || !realpath(path, real) || fstat(fd, &st) < 0 ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        if (fd >= 0)
            close(fd);
        b->bad = 1;
        return;
    }
    close(fd);
    put64(b, (uint64_t)st.st_size);
    put64(b, (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec);
    put(b, h.run_id, sizeof h.run_id);
    put64(b, strlen(real));
    put(b, real, strlen(real));
}

/* The logs part of a directory, as the logs are now. */
static int logs_blob(mf_index *ix, ix_buf *b)
{
    put64(b, ix->n_logs);
    for (size_t i = 0; i < ix->n_logs; i++)
        put_log(b, ix->log_paths[i]);
    return b->bad ? -1 : 0;
}

static void put_text(ix_buf *b, const char *text)
{
    put64(b, strlen(text));
    put(b, text, strlen(text));
}

/* A text of the directory, malloc'd (NULL: bad). */
static char *get_text(ix_buf *b)
{
    size_t n = get_count(b, 1);
    char *t = b->bad ? NULL : malloc(n + 1);
    if (!t) {
        b->bad = 1;
        return NULL;
    }
    get(b, t, n);
    t[n] = 0;
    return t;
}

int ix_save(mf_index *ix)
{
    ix_buf b = { 0 };
    if (logs_blob(ix, &b) < 0) {
        free(b.p);
        return -1;
    }
    uint32_t n_strings = mf_strings_count(ix->pool);
    put64(&b, n_strings);
    for (uint32_t id = 2; id < n_strings; id++)
        put_text(&b, mf_strings_get(ix->pool, id));
    put64(&b, ix->n_warnings);
    for (size_t i = 0; i < ix->n_warnings; i++)
        put_text(&b, ix->warnings[i]);
    put64(&b, ix->n_views);
    for (size_t i = 0; i < ix->n_views; i++) {
        ix_view *v = &ix->views[i];
        const mf_index_view *p = &v->pub;
        uint64_t fixed[] = { p->device, p->pid, p->first_ns, p->last_ns, p->peak_bytes,
                             p->peak_ns, p->held_bytes, p->blocks, p->min_addr, p->max_addr,
                             v->gshift };
        put(&b, fixed, sizeof fixed);
        put_text(&b, mf_index_program(ix, p->pid));
        put(&b, &p->largest_leak, sizeof p->largest_leak);
        put64(&b, p->ranges.n);
        put(&b, p->ranges.r, p->ranges.n * sizeof *p->ranges.r);
        put64(&b, p->n_scopes);
        put(&b, p->scopes, p->n_scopes * sizeof *p->scopes);
        put(&b, p->role_bytes, sizeof p->role_bytes);
        put(&b, p->role_count, sizeof p->role_count);
        put64(&b, p->ooms_total);
        put64(&b, p->n_ooms);
        put(&b, p->ooms, p->n_ooms * sizeof *p->ooms);
        for (int l = 0; l < MF_INDEX_LEVELS; l++) {
            put_dir(&b, &v->levels[l].occ_dir);
            put_dir(&b, &v->levels[l].cell_dir);
            qsort(v->levels[l].block_dir.e, v->levels[l].block_dir.n,
                  sizeof *v->levels[l].block_dir.e, by_key);
            put_dir(&b, &v->levels[l].block_dir);
        }
    }
    uint64_t off;
    int rc = b.bad || ix_write(ix, b.p, b.n, &off) < 0 ? -1 : 0;
    if (rc == 0) {
        ix_file_header h = {
            .magic = IX_MAGIC, .version = MF_INDEX_VERSION, .header_size = sizeof h,
            .n_logs = (uint32_t)ix->n_logs, .n_views = (uint32_t)ix->n_views,
            .wshift = ix->wshift, .levels = MF_INDEX_LEVELS, .cell_level = ix->cell_level,
            .t0 = ix->t0, .t1 = ix->t1,
            .dir_offset = off, .dir_bytes = b.n,
        };
        /* the pieces reach the disk before the header that points at them */
        rc = fdatasync(ix->fd) < 0 || pwrite(ix->fd, &h, sizeof h, 0) != (ssize_t)sizeof h ? -1 : 0;
    }
    free(b.p);
    return rc;
}

/* The strings, interned in their order: each must get its old id. */
static void get_strings(ix_buf *b, mf_index *ix)
{
    size_t n = get_count(b, 8);
    if (b->bad || n < 2 || !(ix->own_pool = mf_strings_new())) {
        b->bad = 1;
        return;
    }
    ix->pool = ix->own_pool;
    for (size_t id = 2; id < n && !b->bad; id++) {
        size_t len = get_count(b, 1);
        if (!b->bad && mf_strings_intern(ix->pool, (const char *)b->p + b->at, len) != id)
            b->bad = 1;
        b->at += b->bad ? 0 : len;
    }
}

static void get_view(ix_buf *b, ix_view *v, uint64_t file_end)
{
    mf_index_view *p = &v->pub;
    uint64_t fixed[11];
    get(b, fixed, sizeof fixed);
    v->gshift = fixed[10] < 64 ? (unsigned)fixed[10] : 63;
    v->col = IX_NONE;
    p->device = (uint16_t)fixed[0];
    p->pid = (uint32_t)fixed[1];
    p->first_ns = fixed[2], p->last_ns = fixed[3], p->peak_bytes = fixed[4];
    p->peak_ns = fixed[5], p->held_bytes = fixed[6], p->blocks = fixed[7];
    p->min_addr = fixed[8], p->max_addr = fixed[9];
    v->program = get_text(b);
    get(b, &p->largest_leak, sizeof p->largest_leak);
    p->ranges.n = get_count(b, sizeof *p->ranges.r);
    if (p->ranges.n && !(p->ranges.r = malloc(p->ranges.n * sizeof *p->ranges.r)))
        b->bad = 1;
    p->ranges.cap = p->ranges.n;
    get(b, p->ranges.r, p->ranges.n * sizeof *p->ranges.r);
    p->n_scopes = get_count(b, sizeof *p->scopes);
    if (p->n_scopes && !(p->scopes = malloc(p->n_scopes * sizeof *p->scopes)))
        b->bad = 1;
    v->cap_scopes = p->n_scopes;
    get(b, p->scopes, p->n_scopes * sizeof *p->scopes);
    get(b, p->role_bytes, sizeof p->role_bytes);
    get(b, p->role_count, sizeof p->role_count);
    p->ooms_total = get64(b);
    p->n_ooms = get_count(b, sizeof *p->ooms);
    if (p->n_ooms && !(p->ooms = malloc(p->n_ooms * sizeof *p->ooms)))
        b->bad = 1;
    v->cap_ooms = p->n_ooms;
    get(b, p->ooms, p->n_ooms * sizeof *p->ooms);
    for (size_t i = 0; i < p->n_ooms && !b->bad; i++)
        if (p->ooms[i].n_top > MF_INDEX_OOM_TOP || p->n_ooms > MF_INDEX_OOMS ||
            p->ooms_total < p->n_ooms)
            b->bad = 1;
    if (!(v->levels = calloc(MF_INDEX_LEVELS, sizeof *v->levels))) {
        b->bad = 1;
        return;
    }
    ix_view_init_levels(v);
    for (int l = 0; !b->bad && l < MF_INDEX_LEVELS; l++) {
        ix_level *L = &v->levels[l];
        get_dir(b, &L->occ_dir, file_end, sizeof(mf_index_occ), 0);
        get_dir(b, &L->cell_dir, file_end, 3, 0);
        get_dir(b, &L->block_dir, file_end, 6, 1);
    }
}

/* The directory of file fd into ix, if it indexes ix's logs as they are
 * now.  0, or -1 (nothing kept) when it does not or cannot be trusted. */
int ix_load(mf_index *ix, int fd)
{
    ix_file_header h;
    struct stat st;
    if (fstat(fd, &st) < 0 || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, IX_MAGIC, 8) || h.version != MF_INDEX_VERSION ||
        h.header_size != sizeof h || h.levels != MF_INDEX_LEVELS || h.wshift > 40 ||
        h.cell_level < 0 || h.cell_level >= MF_INDEX_LEVELS || h.n_logs != ix->n_logs ||
        h.dir_offset < IX_HEADER_BYTES || h.dir_offset > (uint64_t)st.st_size ||
        h.dir_bytes != (uint64_t)st.st_size - h.dir_offset || h.dir_bytes > (1ull << 32))
        return -1;
    ix_buf want = { 0 }, b = { .n = (size_t)h.dir_bytes };
    b.p = malloc(b.n ? b.n : 1);
    int ok = b.p && logs_blob(ix, &want) == 0 &&
             pread(fd, b.p, b.n, (off_t)h.dir_offset) == (ssize_t)b.n &&
             b.n >= want.n && memcmp(b.p, want.p, want.n) == 0;
    free(want.p);
    b.at = want.n;
    if (ok)
        get_strings(&b, ix);
    size_t n_warnings = ok ? get_count(&b, 8) : 0;
    for (size_t i = 0; ok && i < n_warnings && !b.bad; i++) {
        char *w = get_text(&b);
        if (w)
            ix_warn(ix, "%s", w);
        free(w);
    }
    size_t n_views = ok ? get_count(&b, 88) : 0;
    if (ok && n_views && !(ix->views = calloc(n_views, sizeof *ix->views)))
        ok = 0;
    ix->cap_views = n_views;
    for (size_t i = 0; ok && i < n_views && !b.bad; i++)
        get_view(&b, &ix->views[ix->n_views++], h.dir_offset);
    free(b.p);
    if (!ok || b.bad || b.at != b.n) {
        for (size_t i = 0; i < ix->n_views; i++)
            ix_view_free(&ix->views[i]);
        free(ix->views);
        ix->views = NULL;
        ix->n_views = ix->cap_views = 0;
        for (size_t i = 0; i < ix->n_warnings; i++)
            free(ix->warnings[i]);
        ix->n_warnings = 0;
        mf_strings_free(ix->own_pool);
        ix->own_pool = NULL;
        ix->pool = NULL;
        return -1;
    }
    ix->fd = fd;
    ix->wshift = h.wshift;
    ix->cell_level = h.cell_level;
    ix->t0 = h.t0;
    ix->t1 = ix->now = h.t1;
    ix->end = (uint64_t)st.st_size;
    return 0;
}
