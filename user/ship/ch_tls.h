/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * https to a ClickHouse server: OpenSSL (linked statically, as Debian ships its archives) over a
 * connected socket, the server's certificate verified against the system's CAs or
 * BPFSIGHT_CLICKHOUSE_CA's file, for the URL's host name or address.
 */
#ifndef BPFSIGHT_CH_TLS_H
#define BPFSIGHT_CH_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct ch_tls;

/*
 * A TLS session on FD with HOST (verified: its certificate names it, signed by CA, a file,
 * or the system's CAs when NULL). NULL, with why in ERR (LEN bytes), on failure.
 */
struct ch_tls *ch_tls__open(int fd, const char *host, const char *ca, char *err, size_t len);
/* Like send and recv: bytes, 0 at the end, -1 and errno. */
ssize_t ch_tls__send(struct ch_tls *t, const void *p, size_t n);
ssize_t ch_tls__recv(struct ch_tls *t, void *p, size_t n);
void ch_tls__close(struct ch_tls *t);

#endif /* BPFSIGHT_CH_TLS_H */
