// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A scrape endpoint (http_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "http_server.h"

#define REQUEST_MAX  8192
#define IO_TIMEOUT_S 5 /* a client that stalls is dropped: scrapes must not queue behind it */

struct http_server {
	int fd;
	int stop[2]; /* a pipe: writing to it ends the thread */
	pthread_t thread;
	int running;
	http_render_fn render;
	void *arg;
	char url[128];
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
	s->fd = socket(want.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
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

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, type, len);

	if (!send_all(fd, head, n))
		send_all(fd, body, len);
}

/* Read the request head (up to the blank line); 0 or -1. */
static int read_request(int fd, char *buf, size_t cap)
{
	size_t used = 0;

	while (used + 1 < cap) {
		ssize_t r = recv(fd, buf + used, cap - 1 - used, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		used += r;
		buf[used] = 0;
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return 0;
	}
	return -1;
}

static void serve_one(struct http_server *s, int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	char req[REQUEST_MAX], *body = NULL;
	size_t len = 0;
	FILE *f;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (read_request(fd, req, sizeof(req)))
		return;
	if (strncmp(req, "GET ", 4) && strncmp(req, "HEAD ", 5)) {
		reply(fd, "405 Method Not Allowed", "text/plain", "GET /metrics\n", 13);
		return;
	}
	if (!strncmp(req, "GET / ", 6)) {
		static const char home[] = "bpfsight monitor: metrics at /metrics\n";

		reply(fd, "200 OK", "text/plain", home, sizeof(home) - 1);
		return;
	}
	if (strncmp(strchr(req, ' ') + 1, "/metrics", 8) || !strchr(" ?", strchr(req, ' ')[9])) {
		reply(fd, "404 Not Found", "text/plain", "not found: try /metrics\n", 24);
		return;
	}
	f = open_memstream(&body, &len);
	if (!f) {
		reply(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
		return;
	}
	s->render(s->arg, f);
	fclose(f);
	if (!strncmp(req, "HEAD ", 5))
		len = 0;
	reply(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	free(body);
}

static void *serve(void *arg)
{
	struct http_server *s = arg;
	struct pollfd pfd[2] = { { .fd = s->fd, .events = POLLIN },
				 { .fd = s->stop[0], .events = POLLIN } };

	for (;;) {
		int c;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve_one(s, c);
		close(c);
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
	if (s->fd >= 0)
		close(s->fd);
	if (s->stop[0] >= 0)
		close(s->stop[0]);
	if (s->stop[1] >= 0)
		close(s->stop[1]);
	free(s);
}
