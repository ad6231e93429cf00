/*
 * view_request.h - one request to `memflow view`'s server, parsed from the
 * raw method and URI into typed fields, before anything else looks at it.
 * Only the page and a fixed set of data endpoints exist; every parameter
 * is a number, a list of numbers (hide) or the hex token; nothing of the
 * request ever names a file.
 * Bounded: a URI over MF_VIEW_URI_MAX bytes, an unknown endpoint or
 * parameter, a repeated one, a bad number or an escape is an error.
 */
#ifndef MEMFLOW_VIEW_REQUEST_H
#define MEMFLOW_VIEW_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#define MF_VIEW_URI_MAX 2048
#define MF_VIEW_TOKEN_HEX 64      /* 32 random bytes */

enum mf_view_endpoint {
    MF_VIEW_PAGE = 1,         /* / : the page */
    MF_VIEW_META,             /* /api/meta : views, legends, times */
    MF_VIEW_WINDOW,           /* /api/window?view&t0&t1&y0&y1&w&h[&hide&min&max&by] : blocks or a raster */
    MF_VIEW_OCCUPANCY,        /* /api/occupancy?view&t0&t1&cols */
    MF_VIEW_STACK,            /* /api/stack?stack */
    MF_VIEW_RANGE,            /* /api/range?view&t0&t1 : flame graph and growth */
    MF_VIEW_AT,               /* /api/at?view&t0&t1&y0&y1[&hide&min&max] : the block there */
};

/* Parameters (bit of `given` each): */
enum {
    MF_VQ_VIEW = 1, MF_VQ_T0 = 2, MF_VQ_T1 = 4, MF_VQ_Y0 = 8, MF_VQ_Y1 = 16, MF_VQ_W = 32,
    MF_VQ_H = 64, MF_VQ_COLS = 128, MF_VQ_STACK = 256, MF_VQ_HIDE = 512, MF_VQ_MIN = 1024,
    MF_VQ_MAX = 2048, MF_VQ_TOKEN = 4096, MF_VQ_BY = 8192
};

#define MF_VIEW_HIDE_MAX 64       /* scopes a request may hide */
#define MF_VIEW_W_MAX 4096        /* pixels of a raster */
#define MF_VIEW_H_MAX 2048

typedef struct mf_view_request {
    int endpoint;             /* enum mf_view_endpoint */
    int head;                 /* HEAD, not GET */
    unsigned given;           /* MF_VQ_* present */
    char token[MF_VIEW_TOKEN_HEX + 1];
    uint32_t view, cols, stack, w, h;
    uint64_t t0, t1;          /* times in ns since the run's start */
    uint64_t y0, y1;          /* places on the view's address axis (used addresses end to end) */
    uint64_t min, max;        /* sizes shown (requested bytes; max 0: no bound) */
    uint32_t by_role;         /* by=1: a raster's layers are roles (enum mf_block_role),
                                 not scopes */
    uint32_t hide[MF_VIEW_HIDE_MAX];   /* scope string ids not shown */
    size_t n_hide;
} mf_view_request;

/*
 * Parse method and uri (len bytes, not NUL-terminated necessarily) into
 * *out.  Returns 0, or the HTTP status to answer with (400 malformed, 404
 * no such endpoint, 405 a method other than GET or HEAD, 414 too long),
 * with a message in err.  A parsed request has t0 <= t1, y0 < y1, w and
 * h in 1..MF_VIEW_W_MAX / MF_VIEW_H_MAX, and at most MF_VIEW_HIDE_MAX
 * hidden scopes.
 */
int mf_view_parse(const char *method, const char *uri, size_t len, mf_view_request *out,
                  char *err, size_t errlen);

#endif /* MEMFLOW_VIEW_REQUEST_H */
