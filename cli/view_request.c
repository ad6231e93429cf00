/*
 * view_request.c - the parser of `memflow view`'s requests (view_request.h):
 * raw URI in, typed fields out.  It decides everything the server trusts
 * about a request, so it is small, allocation-free and fuzzed
 * (tests/fuzz/fuzz_view_request.c).
 */
#include <stdio.h>
#include <string.h>

#include "view_request.h"

static const struct {
    const char *path;
    int endpoint;
    unsigned needs;           /* parameters it must have (the token always) */
    unsigned allows;
} endpoints[] = {
    { "/", MF_VIEW_PAGE, 0, 0 },
    { "/api/meta", MF_VIEW_META, 0, 0 },
    { "/api/window", MF_VIEW_WINDOW, MF_VQ_VIEW | MF_VQ_T0 | MF_VQ_T1 | MF_VQ_Y0 | MF_VQ_Y1 |
      MF_VQ_W | MF_VQ_H, MF_VQ_HIDE | MF_VQ_MIN | MF_VQ_MAX | MF_VQ_BY },
    { "/api/occupancy", MF_VIEW_OCCUPANCY, MF_VQ_VIEW | MF_VQ_T0 | MF_VQ_T1 | MF_VQ_COLS, 0 },
    { "/api/stack", MF_VIEW_STACK, MF_VQ_STACK, 0 },
    { "/api/range", MF_VIEW_RANGE, MF_VQ_VIEW | MF_VQ_T0 | MF_VQ_T1, 0 },
    { "/api/at", MF_VIEW_AT, MF_VQ_VIEW | MF_VQ_T0 | MF_VQ_T1 | MF_VQ_Y0 | MF_VQ_Y1,
      MF_VQ_HIDE | MF_VQ_MIN | MF_VQ_MAX },
};

static const struct {
    const char *name;
    unsigned bit;
    uint64_t max;
} params[] = {
    { "view", MF_VQ_VIEW, UINT32_MAX }, { "t0", MF_VQ_T0, UINT64_MAX },
    { "t1", MF_VQ_T1, UINT64_MAX }, { "y0", MF_VQ_Y0, UINT64_MAX },
    { "y1", MF_VQ_Y1, UINT64_MAX }, { "w", MF_VQ_W, MF_VIEW_W_MAX },
    { "h", MF_VQ_H, MF_VIEW_H_MAX }, { "cols", MF_VQ_COLS, UINT32_MAX },
    { "stack", MF_VQ_STACK, UINT32_MAX }, { "hide", MF_VQ_HIDE, UINT32_MAX },
    { "min", MF_VQ_MIN, UINT64_MAX }, { "max", MF_VQ_MAX, UINT64_MAX },
    { "by", MF_VQ_BY, 1 }, { "token", MF_VQ_TOKEN, 0 },
};

/* Decimal digits into *v, at most max. */
static int number(const char *p, size_t n, uint64_t max, uint64_t *v)
{
    if (n == 0 || n > 20)
        return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = (uint64_t)(p[i] - '0');
        if (p[i] < '0' || p[i] > '9' || x > (UINT64_MAX - d) / 10)
            return -1;
        x = x * 10 + d;
    }
    if (x > max)
        return -1;
    *v = x;
    return 0;
}

static int fail(char *err, size_t errlen, int status, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return status;
}

/* One name=value pair into out. */
static int param(const char *p, size_t n, mf_view_request *out, char *err, size_t errlen)
{
    const char *eq = memchr(p, '=', n);
    if (!eq)
        return fail(err, errlen, 400, "a parameter without '='");
    size_t name_len = (size_t)(eq - p), vlen = n - name_len - 1;
    const char *v = eq + 1;
    unsigned bit = 0;
    uint64_t max = 0;
    for (size_t i = 0; i < sizeof params / sizeof *params && !bit; i++)
        if (strlen(params[i].name) == name_len && !memcmp(params[i].name, p, name_len)) {
            bit = params[i].bit;
            max = params[i].max;
        }
    if (!bit)
        return fail(err, errlen, 400, "unknown parameter");
    if (out->given & bit)
        return fail(err, errlen, 400, "a parameter given twice");
    out->given |= bit;
    if (bit == MF_VQ_TOKEN) {
        if (vlen != MF_VIEW_TOKEN_HEX)
            return fail(err, errlen, 400, "the token has the wrong length");
        for (size_t i = 0; i < vlen; i++)
            if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
                return fail(err, errlen, 400, "the token is not lowercase hex");
        memcpy(out->token, v, vlen);
        out->token[vlen] = 0;
        return 0;
    }
    if (bit == MF_VQ_HIDE) {              /* numbers joined by ',' (none: empty) */
        for (size_t at = 0; at < vlen;) {
            const char *comma = memchr(v + at, ',', vlen - at);
            size_t k = comma ? (size_t)(comma - (v + at)) : vlen - at;
            uint64_t x;
            if (out->n_hide == MF_VIEW_HIDE_MAX)
                return fail(err, errlen, 400, "too many hidden scopes");
            if (number(v + at, k, max, &x) < 0)
                return fail(err, errlen, 400, "a hidden scope is not a number in range");
            out->hide[out->n_hide++] = (uint32_t)x;
            at += k + (comma ? 1 : 0);
            if (comma && at == vlen)
                return fail(err, errlen, 400, "a list ends with ','");
        }
        return 0;
    }
    uint64_t x;
    if (number(v, vlen, max, &x) < 0)
        return fail(err, errlen, 400, "a parameter is not a number in range");
    switch (bit) {
    case MF_VQ_VIEW: out->view = (uint32_t)x; break;
    case MF_VQ_T0: out->t0 = x; break;
    case MF_VQ_T1: out->t1 = x; break;
    case MF_VQ_Y0: out->y0 = x; break;
    case MF_VQ_Y1: out->y1 = x; break;
    case MF_VQ_W: out->w = (uint32_t)x; break;
    case MF_VQ_H: out->h = (uint32_t)x; break;
    case MF_VQ_COLS: out->cols = (uint32_t)x; break;
    case MF_VQ_MIN: out->min = x; break;
    case MF_VQ_MAX: out->max = x; break;
    case MF_VQ_BY: out->by_role = (uint32_t)x; break;
    default: out->stack = (uint32_t)x; break;
    }
    return 0;
}

int mf_view_parse(const char *method, const char *uri, size_t len, mf_view_request *out,
                  char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!method || (strcmp(method, "GET") && strcmp(method, "HEAD")))
        return fail(err, errlen, 405, "only GET and HEAD");
    out->head = method[0] == 'H';
    if (!uri || len > MF_VIEW_URI_MAX)
        return fail(err, errlen, 414, "the URI is too long");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)uri[i] <= ' ' || (unsigned char)uri[i] >= 0x7f || uri[i] == '%' ||
            uri[i] == '+' || uri[i] == '#')
            return fail(err, errlen, 400, "a byte no request of this server has");
    const char *q = memchr(uri, '?', len);
    size_t path_len = q ? (size_t)(q - uri) : len;
    for (size_t i = 0; i < sizeof endpoints / sizeof *endpoints && !out->endpoint; i++)
        if (strlen(endpoints[i].path) == path_len && !memcmp(endpoints[i].path, uri, path_len))
            out->endpoint = endpoints[i].endpoint;
    if (!out->endpoint)
        return fail(err, errlen, 404, "no such page");
    if (q) {
        const char *p = q + 1, *end = uri + len;
        while (p < end) {
            const char *amp = memchr(p, '&', (size_t)(end - p));
            size_t n = amp ? (size_t)(amp - p) : (size_t)(end - p);
            int rc = param(p, n, out, err, errlen);
            if (rc)
                return rc;
            p += n + (amp ? 1 : 0);
            if (amp && p == end)
                return fail(err, errlen, 400, "an empty parameter");
        }
    }
    for (size_t i = 0; i < sizeof endpoints / sizeof *endpoints; i++) {
        if (endpoints[i].endpoint != out->endpoint)
            continue;
        if ((out->given & endpoints[i].needs) != endpoints[i].needs)
            return fail(err, errlen, 400, "a parameter is missing");
        if (out->given & ~(endpoints[i].needs | endpoints[i].allows | MF_VQ_TOKEN))
            return fail(err, errlen, 400, "a parameter this endpoint does not take");
    }
    if ((out->given & (MF_VQ_T0 | MF_VQ_T1)) == (MF_VQ_T0 | MF_VQ_T1) && out->t1 < out->t0)
        return fail(err, errlen, 400, "t1 is before t0");
    if ((out->given & (MF_VQ_Y0 | MF_VQ_Y1)) == (MF_VQ_Y0 | MF_VQ_Y1) && out->y1 <= out->y0)
        return fail(err, errlen, 400, "y1 is not above y0");
    if (((out->given & MF_VQ_W) && !out->w) || ((out->given & MF_VQ_H) && !out->h))
        return fail(err, errlen, 400, "a raster of no pixels");
    return 0;
}
