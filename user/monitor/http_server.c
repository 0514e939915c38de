// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A scrape endpoint (http_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "http_server.h"

/*
 * Bounds on what a client can take (docs/SECURITY.md): a request head of 4 KiB at most (a
 * scraper sends ~200 bytes), whole within 2 s of the connection; the answer sent within 10 s;
 * 32 connections at once, each served as its bytes come (one slow client holds no other).
 */
#define REQUEST_MAX	    4096
#define REQUEST_DEADLINE_MS 2000
#define REPLY_DEADLINE_MS   10000
#define MAX_CONNS	    32

struct conn {
	int fd;			   /* -1: a free slot */
	long long since, deadline; /* ms of CLOCK_MONOTONIC */
	size_t used;		   /* bytes of the request in REQ */
	char *out;		   /* the answer, once the request is whole */
	size_t out_len, sent;
	char req[REQUEST_MAX];
};

struct http_server {
	int fd;
	int stop[2]; /* a pipe: writing to it ends the thread */
	pthread_t thread;
	int running;
	http_render_fn render;
	void *arg;
	char url[128];
	struct conn conns[MAX_CONNS];
};

/*
 * Split "HOST:PORT" / "[HOST]:PORT" into HOST and PORT; 0 or -EINVAL. A bare "PORT" is this
 * machine's (127.0.0.1, as the default), ":PORT" every interface's (0.0.0.0, as Prometheus's
 * exporters read --web.listen-address=:9100).
 */
static int split_addr(const char *s, char *host, size_t hlen, long *port)
{
	const char *colon, *h = s, *hend;
	char *end;

	if (*s && strspn(s, "0123456789") == strlen(s)) {
		snprintf(host, hlen, "127.0.0.1");
		colon = s - 1; /* the port is all of S */
		goto port;
	}
	if (s[0] == ':' && s[1]) {
		snprintf(host, hlen, "0.0.0.0");
		colon = s;
		goto port;
	}
	if (s[0] == '[') {
		hend = strchr(s, ']');
		if (!hend || hend[1] != ':')
			return -EINVAL;
		h = s + 1;
		colon = hend + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || strchr(s, ':') != colon)
			return -EINVAL; /* IPv6 needs brackets */
		hend = colon;
	}
	if (hend == h || (size_t)(hend - h) >= hlen || !colon[1])
		return -EINVAL;
	memcpy(host, h, hend - h);
	host[hend - h] = 0;
port:
	errno = 0;
	*port = strtol(colon + 1, &end, 10);
	if (errno || *end || *port < 0 || *port > 65535)
		return -EINVAL;
	return 0;
}

static void set_url(struct http_server *s, const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
		snprintf(s->url, sizeof(s->url), "http://[%s]:%d/metrics", ip, port);
		return;
	}
	inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof(ip));
	port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
	snprintf(s->url, sizeof(s->url), "http://%s:%d/metrics", ip, port);
}

/*
 * HOST as a socket address: an IPv4 or IPv6 literal, or "localhost" (no name service: the
 * binary is static, and a daemon's address should not depend on DNS).
 */
static int parse_host(const char *host, long port, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!strcmp(host, "localhost"))
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

struct http_server *http_server__listen(const char *addr_port, char *err, size_t errlen)
{
	struct sockaddr_storage want, bound;
	socklen_t wlen, blen = sizeof(bound);
	struct http_server *s;
	char host[256];
	long port;
	int one = 1;

	if (split_addr(addr_port, host, sizeof(host), &port) ||
	    parse_host(host, port, &want, &wlen)) {
		snprintf(err, errlen,
			 "bad --listen '%s': give ADDR:PORT with an IP address, e.g. "
			 "127.0.0.1:9464, 0.0.0.0:9464, [::1]:9464 or localhost:9464, PORT alone "
			 "(127.0.0.1) or :PORT (every interface) (port 0 to 65535; 0 picks a free "
			 "one)",
			 addr_port);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->stop[0] = s->stop[1] = -1;
	for (int i = 0; i < MAX_CONNS; i++)
		s->conns[i].fd = -1;
	s->fd = socket(want.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, (struct sockaddr *)&want, wlen) || listen(s->fd, 16) ||
	    getsockname(s->fd, (struct sockaddr *)&bound, &blen) || pipe2(s->stop, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot listen on %s: %s%s", addr_port, strerror(errno),
			 errno == EADDRINUSE	  ? " (another program has it: pick another port)"
			 : errno == EADDRNOTAVAIL ? " (not an address of this machine)"
						  : "");
		http_server__free(s);
		return NULL;
	}
	set_url(s, (struct sockaddr *)&bound);
	return s;
}

const char *http_server__url(const struct http_server *s)
{
	return s->url;
}

/* ms of CLOCK_MONOTONIC */
static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->used = c->out_len = c->sent = 0;
}

/* The answer C is to send: STATUS, TYPE, then LEN bytes of BODY. */
static void respond(struct conn *c, long long now, const char *status, const char *type,
		    const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, type, len);

	c->out = malloc(n + len);
	if (!c->out) {
		conn_close(c);
		return;
	}
	memcpy(c->out, head, n);
	memcpy(c->out + n, body, len);
	c->out_len = n + len;
	c->deadline = now + REPLY_DEADLINE_MS;
}

/* C's request is whole (C->req, NUL-terminated): make its answer. */
static void answer(struct http_server *s, struct conn *c, long long now)
{
	const char *req = c->req, *target;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	if (strncmp(req, "GET ", 4) && strncmp(req, "HEAD ", 5)) {
		respond(c, now, "405 Method Not Allowed", "text/plain", "GET /metrics\n", 13);
		return;
	}
	if (!strncmp(req, "GET / ", 6)) {
		static const char home[] = "bpfsight monitor: metrics at /metrics\n";

		respond(c, now, "200 OK", "text/plain", home, sizeof(home) - 1);
		return;
	}
	target = strchr(req, ' ') + 1; /* after "GET " or "HEAD " */
	if (strncmp(target, "/metrics", 8) || !strchr(" ?", target[8])) {
		respond(c, now, "404 Not Found", "text/plain", "not found: try /metrics\n", 24);
		return;
	}
	f = open_memstream(&body, &len);
	if (!f) {
		respond(c, now, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
		return;
	}
	s->render(s->arg, f);
	fclose(f);
	if (!strncmp(req, "HEAD ", 5))
		len = 0;
	respond(c, now, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	free(body);
}

/* Read what C's client sent; answer once the request head is whole (the blank line). */
static void conn_read(struct http_server *s, struct conn *c, long long now)
{
	for (;;) {
		ssize_t r = recv(c->fd, c->req + c->used, sizeof(c->req) - 1 - c->used, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (r <= 0) {
			conn_close(c);
			return;
		}
		c->used += r;
		c->req[c->used] = 0;
		if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
			answer(s, c, now);
			return;
		}
		if (c->used + 1 >= sizeof(c->req)) {
			conn_close(c); /* a request head no scraper sends */
			return;
		}
	}
}

/* Send what C's answer has left; close once it is all sent. */
static void conn_write(struct conn *c)
{
	while (c->sent < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->sent, c->out_len - c->sent, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0)
			break;
		c->sent += w;
	}
	conn_close(c);
}

/*
 * A free slot for a new connection. When every slot is taken, the one that has waited longest
 * for its request gives its place: a client holding connections open cannot keep a scrape out.
 */
static struct conn *free_slot(struct http_server *s)
{
	struct conn *oldest = NULL;

	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &s->conns[i];

		if (c->fd < 0)
			return c;
		if (!c->out && (!oldest || c->since < oldest->since))
			oldest = c;
	}
	if (oldest)
		conn_close(oldest);
	return oldest;
}

static void take_new(struct http_server *s, long long now)
{
	for (;;) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c;

		if (fd < 0)
			return;
		c = free_slot(s);
		if (!c) { /* every slot is sending an answer: this one waits for none */
			close(fd);
			return;
		}
		c->fd = fd;
		c->since = now;
		c->deadline = now + REQUEST_DEADLINE_MS;
	}
}

static void *serve(void *arg)
{
	struct http_server *s = arg;
	struct pollfd pfd[2 + MAX_CONNS];

	pfd[0] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = s->stop[0], .events = POLLIN };
	for (;;) {
		long long now = now_ms(), next = -1;
		int n;

		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &s->conns[i];

			if (c->fd >= 0 && c->deadline <= now)
				conn_close(c); /* too slow a client: others must not wait on it */
			pfd[2 + i] =
				(struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
			if (c->fd >= 0 && (next < 0 || c->deadline - now < next))
				next = c->deadline - now;
		}
		n = poll(pfd, 2 + MAX_CONNS, (int)next);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pfd[1].revents)
			break;
		now = now_ms();
		for (int i = 0; i < MAX_CONNS; i++) {
			struct conn *c = &s->conns[i];

			if (c->fd < 0 || !pfd[2 + i].revents)
				continue;
			if (!c->out)
				conn_read(s, c, now);
			if (c->fd >= 0 && c->out)
				conn_write(c);
		}
		if (pfd[0].revents & POLLIN)
			take_new(s, now);
	}
	return NULL;
}

int http_server__start(struct http_server *s, http_render_fn render, void *arg)
{
	sigset_t all, old;
	int err;

	s->render = render;
	s->arg = arg;
	/* The thread takes no signal: SIGTERM must interrupt the recorder's poll. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&s->thread, NULL, serve, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	s->running = 1;
	return 0;
}

void http_server__free(struct http_server *s)
{
	if (!s)
		return;
	if (s->running) {
		if (write(s->stop[1], "x", 1) < 0) {
			/* the thread still ends when the process does */
		}
		pthread_join(s->thread, NULL);
	}
	for (int i = 0; i < MAX_CONNS; i++)
		conn_close(&s->conns[i]);
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop[0] >= 0)
		close(s->stop[0]);
	if (s->stop[1] >= 0)
		close(s->stop[1]);
	free(s);
}
