/*
 * view_server.c - `memflow view`'s HTTP side (view_server.h), on
 * libmicrohttpd with its one internal thread: every request is checked in
 * this order - peer on loopback (accept policy), Host and Origin ours
 * (403), no body (413), raw URI parsed (view_request.c: 400/404/405/414),
 * token right (403, compared in constant time) - before the index is
 * asked (view_api.c) or the page (compiled in: view_assets.c) is sent.
 * The logs are looked at again at most twice a second, when asked, so a
 * growing log is followed.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "monotonic.h"
#include "view_api.h"
#include "view_server.h"

extern const char mf_view_page[];
extern const unsigned long mf_view_page_len;

#define REFRESH_NS 500000000ull

struct mf_view_server {
    struct MHD_Daemon *d;
    mf_index *ix;
    uint16_t port;
    char token[MF_VIEW_TOKEN_HEX + 1];
    uint64_t refreshed_ns;
};

/* What the server keeps per request: the raw URI, copied by the log callback. */
typedef struct request_state {
    char uri[MF_VIEW_URI_MAX + 1];
    size_t len;
    int too_long;
} request_state;

static int host_is(const char *text, size_t len, uint16_t port)
{
    static const char *hosts[] = { "127.0.0.1", "localhost", "[::1]" };
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        char want[64];
        int n = snprintf(want, sizeof want, "%s:%u", hosts[i], port);
        if ((size_t)n == len && !memcmp(want, text, len))
            return 1;
    }
    return 0;
}

int mf_view_host_ok(const char *host, uint16_t port)
{
    return host && host_is(host, strlen(host), port);
}

int mf_view_origin_ok(const char *origin, uint16_t port)
{
    if (!origin)
        return 1;
    return !strncmp(origin, "http://", 7) && host_is(origin + 7, strlen(origin + 7), port);
}

static int token_equal(const char *a, const char *b)
{
    unsigned diff = 0;
    for (size_t i = 0; i < MF_VIEW_TOKEN_HEX; i++)
        diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
    return diff == 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, int status, const char *type, char *body,
                            size_t len, int head)
{
    struct MHD_Response *r;
    if (head) {
        free(body);
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; "
                            "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
                            "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result refuse(struct MHD_Connection *c, int status, const char *why)
{
    char *body = malloc(strlen(why) + 32);
    if (!body)
        return MHD_NO;
    int n = sprintf(body, "{\"error\":\"%s\"}\n", why);   /* why is our own text */
    return reply(c, status, "application/json", body, (size_t)n, 0);
}

static void *log_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    request_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    size_t len = strlen(uri);
    if (len > MF_VIEW_URI_MAX)
        st->too_long = 1;
    else
        memcpy(st->uri, uri, (st->len = len) + 1);
    return st;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    free(*con_cls);
    *con_cls = NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    mf_view_server *s = cls;
    request_state *st = *con_cls;
    (void)url;
    (void)version;
    (void)upload;
    if (!st)
        return MHD_NO;
    if (*upload_size)            /* read-only: no request has a body */
        return refuse(c, 413, "requests have no body here");
    if (!mf_view_host_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"), s->port) ||
        !mf_view_origin_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"), s->port))
        return refuse(c, 403, "foreign Host or Origin");
    if (st->too_long)
        return refuse(c, 414, "the URI is too long");
    mf_view_request rq;
    char err[128];
    int status = mf_view_parse(method, st->uri, st->len, &rq, err, sizeof err);
    if (status)
        return refuse(c, status, err);
    if (!(rq.given & MF_VQ_TOKEN) || !token_equal(rq.token, s->token))
        return refuse(c, 403, "wrong or missing token");
    if (rq.endpoint == MF_VIEW_PAGE) {
        char *page = malloc(mf_view_page_len + 1);
        if (!page)
            return MHD_NO;
        memcpy(page, mf_view_page, mf_view_page_len);
        return reply(c, 200, "text/html; charset=utf-8", page, mf_view_page_len, rq.head);
    }
    if (mf_monotonic_ns() - s->refreshed_ns > REFRESH_NS) {
        int grew;
        char rerr[512];
        if (mf_index_refresh(s->ix, &grew, rerr, sizeof rerr) < 0)
            fprintf(stderr, "memflow view: %s\n", rerr);
        s->refreshed_ns = mf_monotonic_ns();
    }
    mf_view_answer a;
    if (mf_view_api(s->ix, &rq, &a) < 0)
        return MHD_NO;
    return reply(c, a.status, a.binary ? "application/octet-stream" : "application/json", a.body,
                 a.len, rq.head);
}

/* Only peers on the loopback (the daemon listens there anyway). */
static enum MHD_Result loopback_only(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)cls;
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
        return (ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr) >> 24) == 127
               ? MHD_YES : MHD_NO;
    return MHD_NO;
}

mf_view_server *mf_view_server_start(mf_index *ix, uint16_t port, char *err, size_t errlen)
{
    mf_view_server *s = calloc(1, sizeof *s);
    unsigned char raw[MF_VIEW_TOKEN_HEX / 2];
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        snprintf(err, errlen, "cannot make a random token (getrandom failed)");
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        sprintf(s->token + 2 * i, "%02x", raw[i]);
    s->ix = ix;
    s->refreshed_ns = mf_monotonic_ns();
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, port,
                            loopback_only, NULL, answer, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_URI_LOG_CALLBACK, log_uri, NULL,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)32,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
                            MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen, "cannot listen on 127.0.0.1:%u (in use?)", port);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : port;
    return s;
}

uint16_t mf_view_server_port(const mf_view_server *s) { return s->port; }
const char *mf_view_server_token(const mf_view_server *s) { return s->token; }

void mf_view_server_stop(mf_view_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    free(s);
}
