/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The smallest HTTP/1.1 server a Prometheus scrape needs: GET /metrics answered with what a
 * callback writes, on a thread of its own (signals stay with the caller's thread).
 * `Connection: close` after every answer. Clients are not trusted: up to 32 connections are
 * served at once, each as its bytes come; a request must be whole within 2 s, its answer sent
 * within 10 s, and its head is 4 KiB at most (http_server.c).
 */
#ifndef BPFSIGHT_HTTP_SERVER_H
#define BPFSIGHT_HTTP_SERVER_H

#include <stdio.h>

struct http_server;

/* Writes the body of GET /metrics to F. */
typedef void (*http_render_fn)(void *arg, FILE *f);

/*
 * Parse ADDR:PORT (IPv4 "127.0.0.1:9464", a name "localhost:9464", IPv6 "[::1]:9464"; port 0
 * picks a free one), bind and listen. NULL with a message in ERR (what is wrong, what to give)
 * when the value is malformed or the address cannot be had (in use, not local).
 */
struct http_server *http_server__listen(const char *addr_port, char *err, size_t errlen);
/* "http://127.0.0.1:9464/metrics": the address bound (the port chosen, with port 0). */
const char *http_server__url(const struct http_server *s);
/* Serve on a new thread; 0 or -errno. */
int http_server__start(struct http_server *s, http_render_fn render, void *arg);
/* Stop serving (an answer in progress is finished first), close, free. NULL is fine. */
void http_server__free(struct http_server *s);

#endif /* BPFSIGHT_HTTP_SERVER_H */
