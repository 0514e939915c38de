/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A ClickHouse server over its HTTP interface (port 8123's): a URL parsed, a statement sent
 * with its data, the answer read. One request per connection, HTTP/1.1 with `Connection:
 * close`, over TLS for https (ch_tls.h). Credentials come from the environment or a file,
 * never the command line (docs/CLICKHOUSE.md).
 */
#ifndef BPFSIGHT_CH_HTTP_H
#define BPFSIGHT_CH_HTTP_H

#include <stddef.h>
#include "ch_version.h"

struct ch_server {
	char host[256];
	char port[8];
	char job[256];	/* the URL's path, "" when it has none */
	char auth[512]; /* "Basic ...", "" without credentials */
	int timeout_s;	/* per connect, send and receive */
	int tls;	/* https */
	char ca[4096];	/* BPFSIGHT_CLICKHOUSE_CA: the CAs that sign the server; "": the system's */
	char error[512];	   /* the last failure, as the server or the socket said it */
	struct ch_version version; /* its release (ch_version__ask), 0.0 until asked */
	int verbose;		   /* -v: its release said on stderr when asked */
};

/*
 * URL (clickhouse://HOST:PORT/JOB, http://..., https://...) into S, with the credentials of
 * BPFSIGHT_CLICKHOUSE_USER and _PASSWORD or of the file BPFSIGHT_CLICKHOUSE_CREDENTIALS
 * ("user:password"). 0, or said on stderr and -EINVAL (a bad URL, credentials in it).
 */
int ch_server__parse(struct ch_server *s, const char *url);

/*
 * Run SQL with BODY (LEN bytes, its data: an INSERT's rows; NULL for none), the answer's body
 * into *OUT (malloc'd, NUL-terminated; NULL: dropped). 0; -ECONNREFUSED, -ETIMEDOUT,
 * -ECONNRESET, -EHOSTUNREACH (worth retrying: the server is down or slow); -EACCES (the server
 * refused the credentials); -EPROTO (the server refused the statement, or https failed: its
 * certificate, its protocol; S->error says why).
 */
int ch_server__run(struct ch_server *s, const char *sql, const char *body, size_t len, char **out);

/* "HOST:PORT" into BUF, an IPv6 address in brackets ("[::1]:8123"): for messages and Host. */
const char *ch_server__where(const struct ch_server *s, char *buf, size_t len);

/* Is ERR one worth retrying (the server down, slow, restarting)? */
int ch_server__retryable(int err);

#endif /* BPFSIGHT_CH_HTTP_H */
