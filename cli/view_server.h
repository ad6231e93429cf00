/*
 * view_server.h - the local web server of `memflow view` (libmicrohttpd):
 * loopback only, a random token in every URL, requests with a foreign Host
 * or Origin refused (DNS rebinding), read-only, bounded, one request
 * served at a time by one thread (the index is not thread-safe).
 */
#ifndef MEMFLOW_VIEW_SERVER_H
#define MEMFLOW_VIEW_SERVER_H

#include <stdint.h>

#include "index.h"
#include "view_request.h"

typedef struct mf_view_server mf_view_server;

/* Start serving ix on 127.0.0.1:port (0: a free port).  NULL with a message
 * in err when the port cannot be had or no random token can be made. */
mf_view_server *mf_view_server_start(mf_index *ix, uint16_t port, char *err, size_t errlen);

/* The port it listens on, and its token (MF_VIEW_TOKEN_HEX hex characters). */
uint16_t mf_view_server_port(const mf_view_server *s);
const char *mf_view_server_token(const mf_view_server *s);

void mf_view_server_stop(mf_view_server *s);

/* Is host (a Host header, or NULL) this server's own (127.0.0.1:PORT,
 * localhost:PORT, [::1]:PORT)?  Is origin (an Origin header, NULL when
 * none) one of the same with http://? */
int mf_view_host_ok(const char *host, uint16_t port);
int mf_view_origin_ok(const char *origin, uint16_t port);

#endif /* MEMFLOW_VIEW_SERVER_H */
