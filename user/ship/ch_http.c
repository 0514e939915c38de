// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One statement to a ClickHouse server over HTTP (ch_http.h): POST /?query=SQL with the data
 * as the body, the answer read to the end (the server closes: `Connection: close`), chunked
 * or not. The server says a failed statement by a status other than 200 and its exception's
 * text ("Code: 516, ... Authentication failed"); a socket that fails says the server is down.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "array.h"
#include "ch_http.h"
#include "ch_tls.h"

/* ClickHouse's codes of a refused login: UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD,
 * IP_ADDRESS_NOT_ALLOWED, AUTHENTICATION_FAILED. */
static const int ch_auth_codes[] = { 192, 193, 194, 195, 516 };

int ch_server__retryable(int err)
{
	return err == -ECONNREFUSED || err == -ETIMEDOUT || err == -ECONNRESET ||
	       err == -EHOSTUNREACH || err == -ENETUNREACH || err == -EPIPE || err == -EAGAIN;
}

static int ch_connect(struct ch_server *s)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { .tv_sec = s->timeout_s };
	int fd = -1, err = -EHOSTUNREACH, rc;
	char w[300];

	rc = getaddrinfo(s->host, s->port, &hints, &res);
	if (rc) {
		snprintf(s->error, sizeof(s->error), "%s: %s", s->host, gai_strerror(rc));
		return rc == EAI_AGAIN ? -EAGAIN : -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0)
			continue;
		/* Linux bounds connect by SO_SNDTIMEO too: a host that never answers times out */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		err = errno == EINPROGRESS || errno == EAGAIN ? -ETIMEDOUT : -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(s->error, sizeof(s->error), "%s: %s", ch_server__where(s, w, sizeof(w)),
			 strerror(-err));
	return fd < 0 ? err : fd;
}

/* A connection: its socket, and its TLS session for https. */
struct ch_conn {
	int fd;
	struct ch_tls *tls;
};

static int ch_send(struct ch_conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t w = c->tls ? ch_tls__send(c->tls, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* SQL as a URL's query value. */
static char *ch_urlencode(const char *sql)
{
	char *out = malloc(strlen(sql) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const void *)sql; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.~", *p))
			*o++ = (char)*p;
		else
			o += sprintf(o, "%%%02X", *p);
	}
	*o = 0;
	return out;
}

/* The whole answer into *BUF (NUL-terminated), *LEN bytes. */
static int ch_read_all(struct ch_conn *c, char **buf, size_t *len)
{
	size_t cap = 0;

	*buf = NULL;
	*len = 0;
	for (;;) {
		ssize_t r;

		if (array__grow_from((void **)buf, *len + 65536, &cap, 1, 65536))
			return -ENOMEM;
		r = c->tls ? ch_tls__recv(c->tls, *buf + *len, cap - *len - 1)
			   : recv(c->fd, *buf + *len, cap - *len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (!r)
			break;
		*len += (size_t)r;
	}
	(*buf)[*len] = 0;
	return 0;
}

/* A chunked body, decoded in place: its length. */
static size_t ch_unchunk(char *body)
{
	char *in = body, *out = body, *end;
	unsigned long n;

	for (;;) {
		n = strtoul(in, &end, 16);
		if (end == in || !n)
			break;
		in = strstr(end, "\r\n");
		if (!in)
			break;
		in += 2;
		if (strlen(in) < n)
			n = strlen(in);
		memmove(out, in, n);
		out += n;
		in += n;
		if (!strncmp(in, "\r\n", 2))
			in += 2;
	}
	*out = 0;
	return (size_t)(out - body);
}

/* The answer's status and body (moved to the front of RESP). */
static int ch_answer(struct ch_server *s, char *resp, size_t len, int *status)
{
	char *body = strstr(resp, "\r\n\r\n"), w[300];
	int chunked;

	if (sscanf(resp, "HTTP/%*s %d", status) != 1 || !body) {
		snprintf(s->error, sizeof(s->error), "%s: not an HTTP answer (%zu bytes)",
			 ch_server__where(s, w, sizeof(w)), len);
		return -EPROTO;
	}
	*body = 0;
	chunked = !!strcasestr(resp, "Transfer-Encoding: chunked");
	body += 4;
	len -= (size_t)(body - resp);
	memmove(resp, body, len + 1);
	if (chunked)
		ch_unchunk(resp);
	return 0;
}

static int ch_refusal(struct ch_server *s, const char *body, int status)
{
	int code = -1;
	const char *c = strstr(body, "Code: ");

	if (c)
		code = atoi(c + 6);
	snprintf(s->error, sizeof(s->error), "HTTP %d: %.*s", status, (int)strcspn(body, "\n"),
		 body);
	for (size_t i = 0; i < sizeof(ch_auth_codes) / sizeof(*ch_auth_codes); i++)
		if (code == ch_auth_codes[i] || status == 401 || status == 403)
			return -EACCES;
	/* a server starting or overloaded: TOO_MANY_SIMULTANEOUS_QUERIES, its 503 */
	if (status == 503 || code == 202)
		return -EAGAIN;
	return -EPROTO;
}

int ch_server__run(struct ch_server *s, const char *sql, const char *body, size_t len, char **out)
{
	/* a statement without data is the body (a report's SQL is longer than URLs may be) */
	char *q = body ? ch_urlencode(sql) : strdup(""), *head = NULL, *resp = NULL;
	char w[300]; /* host:port, an IPv6 address in brackets (the Host header, messages) */
	int statement_in_body = 0;
	struct ch_conn c = { .fd = -1 };
	int fd, err, n, status = 0;
	size_t rlen;

	if (out)
		*out = NULL;
	if (!q)
		return -ENOMEM;
	if (!body) {
		body = sql;
		len = strlen(sql);
		statement_in_body = 1;
	}
	n = asprintf(&head,
		     "POST /%s%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s%s%s\r\n",
		     statement_in_body ? "" : "?query=", q, ch_server__where(s, w, sizeof(w)), len,
		     *s->auth ? "Authorization: " : "", s->auth, *s->auth ? "\r\n" : "");
	free(q);
	if (n < 0)
		return -ENOMEM;
	fd = ch_connect(s);
	if (fd < 0) {
		free(head);
		return fd;
	}
	c.fd = fd;
	if (s->tls) {
		c.tls = ch_tls__open(fd, s->host, *s->ca ? s->ca : NULL, s->error,
				     sizeof(s->error));
		if (!c.tls) {
			close(fd);
			free(head);
			return -EPROTO; /* not worth retrying: a certificate, a protocol */
		}
	}
	err = ch_send(&c, head, (size_t)n);
	err = err ?: ch_send(&c, body ? body : "", body ? len : 0);
	/* a server that refused early (a bad login) closed its side: its answer says why */
	if (err == -EPIPE || err == -ECONNRESET || !err) {
		int serr = err;

		err = ch_read_all(&c, &resp, &rlen);
		if (!err && !rlen && serr)
			err = serr;
	}
	ch_tls__close(c.tls);
	close(fd);
	free(head);
	if (!err && !rlen)
		err = -ECONNRESET; /* closed without a word: killed mid-request */
	if (err && !ch_server__retryable(err) && err != -ENOMEM)
		err = -ECONNRESET;
	if (err) {
		snprintf(s->error, sizeof(s->error), "%s: %s", ch_server__where(s, w, sizeof(w)),
			 strerror(-err));
		free(resp);
		return err;
	}
	err = ch_answer(s, resp, rlen, &status);
	if (!err && status != 200)
		err = ch_refusal(s, resp, status);
	if (!err && out)
		*out = resp;
	else
		free(resp);
	return err;
}
