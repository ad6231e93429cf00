/*
 * view_request.h - one request to `memflow view`'s server, parsed from the
 * raw method and URI into typed fields, before anything else looks at it.
 * Only the page and a fixed set of data endpoints exist; every parameter
 * is a number or the hex token; nothing of the request ever names a file.
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
    MF_VIEW_WINDOW,           /* /api/window?view&level&t0&t1&a0&a1 */
    MF_VIEW_OCCUPANCY,        /* /api/occupancy?view&t0&t1&cols */
    MF_VIEW_STACK,            /* /api/stack?stack */
    MF_VIEW_RANGE,            /* /api/range?view&t0&t1 : flame graph and growth */
};

/* Parameters (bit of `given` each): */
enum {
    MF_VQ_VIEW = 1, MF_VQ_LEVEL = 2, MF_VQ_T0 = 4, MF_VQ_T1 = 8, MF_VQ_A0 = 16,
    MF_VQ_A1 = 32, MF_VQ_COLS = 64, MF_VQ_STACK = 128, MF_VQ_TOKEN = 256
};

typedef struct mf_view_request {
    int endpoint;             /* enum mf_view_endpoint */
    int head;                 /* HEAD, not GET */
    unsigned given;           /* MF_VQ_* present */
    char token[MF_VIEW_TOKEN_HEX + 1];
    uint32_t view, cols, stack;
    int level;                /* -1 .. 63 */
    uint64_t t0, t1, a0, a1;  /* times in ns since the run's start; addresses */
} mf_view_request;

/*
 * Parse method and uri (len bytes, not NUL-terminated necessarily) into
 * *out.  Returns 0, or the HTTP status to answer with (400 malformed, 404
 * no such endpoint, 405 a method other than GET or HEAD, 414 too long),
 * with a message in err.
 */
int mf_view_parse(const char *method, const char *uri, size_t len, mf_view_request *out,
                  char *err, size_t errlen);

#endif /* MEMFLOW_VIEW_REQUEST_H */
