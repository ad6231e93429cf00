/*
 * view_raster.c - a window's picture in pixels (view_raster.h).  Each
 * rectangle adds, per pixel row it meets, its density times its share of
 * the row to a row of differences along x (first and last pixel by their
 * share, the ones between by one +/- pair), in the layer of its scope, and
 * +1/-1 to a row of counts; finishing sums each row left to right.  So a
 * rectangle costs the rows it meets, not its length, and a pixel is held
 * exactly when a count says so (the sums of fractions only choose the
 * scope and the fill).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "view_raster.h"

int mf_axis_init(mf_axis *a, const mf_range *r, size_t n, uint64_t lo, uint64_t hi)
{
    memset(a, 0, sizeof *a);
    if (!n) {
        a->own = (mf_range){ .start = lo, .end = hi > lo ? hi : lo + 1 };
        r = &a->own;
        n = 1;
    }
    a->at = malloc(n * sizeof *a->at);
    if (!a->at)
        return -1;
    a->r = r;
    a->n = n;
    for (size_t i = 0; i < n; i++) {
        a->at[i] = a->total;
        a->total += r[i].end - r[i].start;
    }
    return 0;
}

void mf_axis_free(mf_axis *a)
{
    free(a->at);
    a->at = NULL;
}

double mf_axis_y(mf_axis *a, uint64_t addr)
{
    size_t lo = a->last, hi = a->n - 1;
    if (a->r[lo].start <= addr && (lo + 1 == a->n || addr < a->r[lo + 1].start))
        hi = lo;                                    /* the range found last */
    else
        lo = 0;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (a->r[mid].start <= addr)
            lo = mid;
        else
            hi = mid - 1;
    }
    a->last = lo;
    if (addr < a->r[lo].start)
        return (double)a->at[lo];
    uint64_t in = addr - a->r[lo].start, len = a->r[lo].end - a->r[lo].start;
    return (double)a->at[lo] + (double)(in < len ? in : len);
}

uint64_t mf_axis_addr(const mf_axis *a, uint64_t y)
{
    size_t lo = 0, hi = a->n - 1;
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (a->at[mid] <= y)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint64_t off = y > a->at[lo] ? y - a->at[lo] : 0;
    return a->r[lo].start + off < a->r[lo].start ? UINT64_MAX : a->r[lo].start + off;
}

int mf_raster_init(mf_raster *r, mf_axis *axis, uint32_t w, uint32_t h, uint64_t t0,
                   uint64_t t1, uint64_t y0, uint64_t y1)
{
    memset(r, 0, sizeof *r);
    r->axis = axis;
    r->w = w;
    r->h = h;
    r->t0 = (double)t0;
    r->t1 = (double)(t1 > t0 ? t1 : t0 + 1);
    r->y0 = (double)y0;
    r->y1 = (double)(y1 > y0 ? y1 : y0 + 1);
    r->count = calloc((size_t)(w + 1) * h, sizeof *r->count);
    return r->count ? 0 : -1;
}

/* The layer of scope (made when new; the last one is shared). */
static double *layer_of(mf_raster *r, uint32_t scope)
{
    for (size_t i = 0; i < r->n_layers; i++)
        if (r->scope[i] == scope)
            return r->layer[i];
    size_t i = r->n_layers;
    if (i == MF_RASTER_LAYERS) {
        i = MF_RASTER_LAYERS - 1;
        r->scope[i] = MF_RASTER_OTHER;
        return r->layer[i];
    }
    r->layer[i] = calloc((size_t)(r->w + 1) * r->h, sizeof *r->layer[i]);
    if (!r->layer[i]) {
        r->oom = 1;
        return NULL;
    }
    r->scope[i] = scope;
    r->n_layers++;
    return r->layer[i];
}

/* [x0, x1) pixels (fractions), row `row`, v per whole pixel. */
static void add_span(mf_raster *r, double *row, int32_t *count, double x0, double x1, double v)
{
    uint32_t a = (uint32_t)x0, b = (uint32_t)ceil(x1);
    b = b > a + 1 ? b - 1 : a;                     /* the last pixel it reaches into */
    if (b >= r->w)
        b = r->w - 1;
    count[a] += 1;
    count[b + 1] -= 1;
    if (a == b) {
        row[a] += v * (x1 - x0);
        row[a + 1] -= v * (x1 - x0);
        return;
    }
    row[a] += v * ((double)(a + 1) - x0);          /* the first pixel's share */
    row[a + 1] -= v * ((double)(a + 1) - x0);
    row[a + 1] += v;                               /* whole pixels a + 1 .. b - 1 */
    row[b] -= v;
    row[b] += v * (x1 - (double)b);                /* the last pixel's share */
    row[b + 1] -= v * (x1 - (double)b);
}

void mf_raster_add(mf_raster *r, uint64_t t_from, uint64_t t_to, uint64_t addr,
                   uint64_t bytes, double density, uint32_t scope)
{
    double x0 = ((double)t_from - r->t0) / (r->t1 - r->t0) * r->w;
    double x1 = ((double)t_to - r->t0) / (r->t1 - r->t0) * r->w;
    uint64_t a_end = addr + bytes < addr ? UINT64_MAX : addr + bytes;
    double ya = mf_axis_y(r->axis, addr), yb = mf_axis_y(r->axis, a_end);
    /* rows from the top: row = (y1 - y) / (y1 - y0) * h */
    double top = (r->y1 - yb) / (r->y1 - r->y0) * r->h;
    double bottom = (r->y1 - ya) / (r->y1 - r->y0) * r->h;
    if (x1 <= x0)
        x1 = x0 + 1e-9;                           /* an instant still shows */
    if (bottom <= top)
        bottom = top + 1e-9;
    if (x1 <= 0 || x0 >= r->w || bottom <= 0 || top >= r->h || density <= 0)
        return;
    x0 = x0 < 0 ? 0 : x0;
    x1 = x1 > r->w ? r->w : x1;
    top = top < 0 ? 0 : top;
    bottom = bottom > r->h ? r->h : bottom;
    double *layer = layer_of(r, scope);
    if (!layer)
        return;
    size_t stride = (size_t)r->w + 1;
    uint32_t first = (uint32_t)top, last = (uint32_t)ceil(bottom) - 1;
    if (last >= r->h)
        last = r->h - 1;
    for (uint32_t row = first; row <= last; row++) {
        double lo = row > top ? row : top, hi = row + 1.0 < bottom ? row + 1.0 : bottom;
        add_span(r, layer + row * stride, r->count + row * stride, x0, x1,
                 density * (hi - lo));
    }
}

int mf_raster_finish(mf_raster *r, uint8_t *layer, uint8_t *fill)
{
    if (r->oom)
        return -1;
    size_t stride = (size_t)r->w + 1;
    double run[MF_RASTER_LAYERS];
    for (uint32_t row = 0; row < r->h; row++) {
        int32_t held = 0;
        memset(run, 0, sizeof run);
        for (uint32_t x = 0; x < r->w; x++) {
            size_t at = row * stride + x, px = (size_t)row * r->w + x;
            double total = 0, best = -1;
            size_t which = 0;
            held += r->count[at];
            for (size_t i = 0; i < r->n_layers; i++) {
                run[i] += r->layer[i][at];
                double v = run[i] > 0 ? run[i] : 0;
                total += v;
                if (v > best) {
                    best = v;
                    which = i;
                }
            }
            if (held <= 0) {
                layer[px] = MF_RASTER_NONE;
                fill[px] = 0;
                continue;
            }
            unsigned q = total >= 1 ? 255 : (unsigned)ceil(total * 255);
            layer[px] = (uint8_t)which;
            fill[px] = (uint8_t)(q ? q : 1);
        }
    }
    return 0;
}

void mf_raster_free(mf_raster *r)
{
    for (size_t i = 0; i < r->n_layers; i++)
        free(r->layer[i]);
    free(r->count);
    memset(r, 0, sizeof *r);
}
