/*
 * view_api.h - the data answers of `memflow view` (JSON), computed from the
 * view index (analyze/index/index.h) for one parsed request (view_request.h).
 * Times in answers and requests are ns since the run's start (t0);
 * addresses are plain numbers; y0/y1 are places on the view's address
 * axis (its used ranges end to end).  A window's answer is bytes, little
 * endian (docs/OUTPUTS.md): blocks whole, or a raster of the page's
 * pixels.  Every list is bounded (MF_VIEW_*_MAX).
 */
#ifndef MEMFLOW_VIEW_API_H
#define MEMFLOW_VIEW_API_H

#include <stddef.h>

#include "index.h"
#include "view_request.h"

#define MF_VIEW_BLOCKS_MAX 20000        /* a window holding at most these is answered whole */
#define MF_VIEW_RASTER_BLOCKS 500000    /* ...at most these: a raster drawn from its blocks */
#define MF_VIEW_BLOCK_BYTES 64          /* one block of a window's answer */
#define MF_VIEW_COLS_MAX 8192
#define MF_VIEW_TOP 20            /* rows of the growth tables */

typedef struct mf_view_answer {
    int status;               /* HTTP status */
    int binary;               /* application/octet-stream (a window), else JSON */
    char *body;               /* malloc'd; the caller frees */
    size_t len;
} mf_view_answer;

/* Answer a data request (not MF_VIEW_PAGE).  Always fills *out (an error
 * status carries a JSON {"error": ...} body); -1 only when out of memory. */
int mf_view_api(mf_index *ix, const mf_view_request *rq, mf_view_answer *out);

#endif /* MEMFLOW_VIEW_API_H */
