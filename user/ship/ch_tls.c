// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* https to a ClickHouse server: ch_tls.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include "ch_tls.h"

struct ch_tls {
	SSL_CTX *ctx;
	SSL *ssl;
};

void ch_tls__close(struct ch_tls *t)
{
	if (!t)
		return;
	if (t->ssl)
		SSL_free(t->ssl);
	SSL_CTX_free(t->ctx);
	free(t);
}

static struct ch_tls *ch_tls_fail(struct ch_tls *t, const char *what, char *err, size_t len)
{
	unsigned long e = ERR_get_error();
	long v = t && t->ssl ? SSL_get_verify_result(t->ssl) : X509_V_OK;

	if (v != X509_V_OK)
		snprintf(err, len, "%s: the server's certificate: %s", what,
			 X509_verify_cert_error_string(v));
	else
		snprintf(err, len, "%s: %s", what, e ? ERR_reason_error_string(e) : "failed");
	ERR_clear_error();
	ch_tls__close(t);
	return NULL;
}

struct ch_tls *ch_tls__open(int fd, const char *host, const char *ca, char *err, size_t len)
{
	struct ch_tls *t = calloc(1, sizeof(*t));
	unsigned char addr[16];
	int ip;

	if (!t) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (!t->ctx)
		return ch_tls_fail(t, "TLS", err, len);
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	/* ClickHouse closes after its answer without close_notify: the end of the answer */
	SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* SSL_write writes with write(2): a server gone must be an error, not SIGPIPE's death */
	signal(SIGPIPE, SIG_IGN);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	if (ca ? !SSL_CTX_load_verify_locations(t->ctx, ca, NULL)
	       : !SSL_CTX_set_default_verify_paths(t->ctx))
		return ch_tls_fail(t, ca ? ca : "the system's CAs", err, len);
	t->ssl = SSL_new(t->ctx);
	if (!t->ssl || !SSL_set_fd(t->ssl, fd))
		return ch_tls_fail(t, "TLS", err, len);
	/* an address is checked against the certificate's IP names, a name against its DNS ones */
	ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
	if (ip ? !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host)
	       : !SSL_set1_host(t->ssl, host) || !SSL_set_tlsext_host_name(t->ssl, host))
		return ch_tls_fail(t, host, err, len);
	if (SSL_connect(t->ssl) != 1)
		return ch_tls_fail(t, host, err, len);
	return t;
}

ssize_t ch_tls__send(struct ch_tls *t, const void *p, size_t n)
{
	int w = SSL_write(t->ssl, p, n > 1 << 30 ? 1 << 30 : (int)n);

	if (w > 0)
		return w;
	if (SSL_get_error(t->ssl, w) == SSL_ERROR_SYSCALL && errno)
		return -1;
	errno = ECONNRESET;
	return -1;
}

ssize_t ch_tls__recv(struct ch_tls *t, void *p, size_t n)
{
	int r = SSL_read(t->ssl, p, n > 1 << 30 ? 1 << 30 : (int)n);

	if (r > 0)
		return r;
	switch (SSL_get_error(t->ssl, r)) {
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		/* a server that closes without close_notify (Poco's after Connection: close) */
		if (!errno)
			return 0;
		return -1;
	default:
		errno = ECONNRESET;
		return -1;
	}
}
