/*
 * fuzz_view_request.c - libFuzzer target: any bytes as the method and URI
 * of a request to `memflow view` (cli/view_request.c), and as the Host and
 * Origin headers it checks (cli/view_server.c's mf_view_host_ok and
 * mf_view_origin_ok are compiled from a copy of their rules here, the
 * parser from its own file).  Nothing may crash, overflow or read past the
 * input; every result must be a status the server knows.
 *
 * Input: the first byte picks the method (GET, HEAD, POST, or the next
 * bytes up to a NUL); the rest is the URI.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "view_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *methods[] = { "GET", "HEAD", "POST" };
    if (size == 0)
        return 0;
    const char *method = methods[data[0] % 3];
    char *uri = malloc(size);         /* exactly the bytes: the parser gets a length */
    if (!uri)
        return 0;
    memcpy(uri, data + 1, size - 1);
    mf_view_request rq;
    char err[128];
    int status = mf_view_parse(method, uri, size - 1, &rq, err, sizeof err);
    if (status != 0 && status != 400 && status != 404 && status != 405 && status != 414)
        abort();
    if (status == 0 && (rq.endpoint < MF_VIEW_PAGE || rq.endpoint > MF_VIEW_AT ||
                        ((rq.given & MF_VQ_TOKEN) && strlen(rq.token) != MF_VIEW_TOKEN_HEX) ||
                        rq.n_hide > MF_VIEW_HIDE_MAX || rq.w > MF_VIEW_W_MAX ||
                        rq.h > MF_VIEW_H_MAX))
        abort();
    if (status == 0 && (rq.given & MF_VQ_T1) && (rq.given & MF_VQ_T0) && rq.t1 < rq.t0)
        abort();
    if (status == 0 && (rq.given & MF_VQ_Y1) && (rq.given & MF_VQ_Y0) && rq.y1 <= rq.y0)
        abort();
    if (status == 0 && (((rq.given & MF_VQ_W) && !rq.w) || ((rq.given & MF_VQ_H) && !rq.h)))
        abort();
    if (memchr(err, 0, sizeof err) == NULL)
        abort();
    free(uri);
    return 0;
}
