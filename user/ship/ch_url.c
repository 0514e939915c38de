// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A ClickHouse URL and the credentials that go with it (ch_http.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "ch_http.h"
#include "env.h"
#include "msg.h"

static void base64(const char *in, size_t n, char *out, size_t len)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < len; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;

		v |= i + 1 < n ? (unsigned char)in[i + 1] << 8 : 0;
		v |= i + 2 < n ? (unsigned char)in[i + 2] : 0;
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = 0;
}

/* "user:password" from the file PATH, which only its owner may read. */
static int ch_credentials_file(const char *path, char *buf, size_t len)
{
	struct stat st;
	FILE *f = fopen(path, "re");

	if (!f || fstat(fileno(f), &st)) {
		pr_err("cannot read the credentials file %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		pr_err("%s: others may read these credentials: chmod 600 %s\n", path, path);
		fclose(f);
		return -EINVAL;
	}
	if (!fgets(buf, (int)len, f) || !strchr(buf, ':')) {
		pr_err("%s: expected one line, user:password\n", path);
		fclose(f);
		return -EINVAL;
	}
	fclose(f);
	buf[strcspn(buf, "\r\n")] = 0;
	return 0;
}

static int ch_credentials(struct ch_server *s)
{
	/* root reading a file another user names could send its first line anywhere: env.h */
	const char *file = env__trusted("BPFSIGHT_CLICKHOUSE_CREDENTIALS");
	const char *user = getenv("BPFSIGHT_CLICKHOUSE_USER");
	const char *pass = getenv("BPFSIGHT_CLICKHOUSE_PASSWORD");
	char pair[256], enc[400];
	int err;

	s->auth[0] = 0;
	if (file && *file) {
		err = ch_credentials_file(file, pair, sizeof(pair));
		if (err)
			return err;
	} else if (user && *user) {
		if (snprintf(pair, sizeof(pair), "%s:%s", user, pass ? pass : "") >=
		    (int)sizeof(pair)) {
			pr_err("BPFSIGHT_CLICKHOUSE_USER and _PASSWORD: too long\n");
			return -EINVAL;
		}
	} else {
		return 0; /* the server's default user */
	}
	base64(pair, strlen(pair), enc, sizeof(enc));
	snprintf(s->auth, sizeof(s->auth), "Basic %s", enc);
	return 0;
}

const char *ch_server__where(const struct ch_server *s, char *buf, size_t len)
{
	int v6 = !!strchr(s->host, ':');

	snprintf(buf, len, "%s%s%s:%s", v6 ? "[" : "", s->host, v6 ? "]" : "", s->port);
	return buf;
}

int ch_server__parse(struct ch_server *s, const char *url)
{
	const char *p, *host, *end, *colon, *ca;
	size_t n;

	memset(s, 0, sizeof(*s));
	s->timeout_s = 30;
	if (!strncmp(url, "clickhouse://", 13)) {
		p = url + 13;
	} else if (!strncmp(url, "http://", 7)) {
		p = url + 7;
	} else if (!strncmp(url, "https://", 8)) {
		p = url + 8;
		s->tls = 1;
	} else {
		pr_err("bad URL '%s': clickhouse://HOST:PORT/JOB, http://HOST:PORT/JOB or "
		       "https://HOST:PORT/JOB\n",
		       url);
		return -EINVAL;
	}
	host = p;
	end = host + strcspn(host, "/?#");
	if (memchr(host, '@', end - host)) {
		pr_err("credentials in a URL end up in shell histories and process lists: set "
		       "BPFSIGHT_CLICKHOUSE_USER and _PASSWORD, or BPFSIGHT_CLICKHOUSE_CREDENTIALS "
		       "to a file holding user:password\n");
		return -EINVAL;
	}
	if (*host == '[') {
		/* an IPv6 address, [::1]:8123: its colons are not the port's */
		const char *close = memchr(host, ']', end - host);

		n = close ? (size_t)(close - host - 1) : 0;
		if (!n || n >= sizeof(s->host) ||
		    strspn(host + 1, "0123456789abcdefABCDEF:.") != n ||
		    (close[1] != ':' && close + 1 != end)) {
			pr_err("bad URL '%s': an IPv6 address in brackets, [::1]:8123\n", url);
			return -EINVAL;
		}
		memcpy(s->host, host + 1, n);
		colon = close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(host, ':', end - host);
		n = (colon ? colon : end) - host;
		if (!n || n >= sizeof(s->host)) {
			pr_err("bad URL '%s': no host%s\n", url,
			       colon && memchr(colon + 1, ':', end - colon - 1)
				       ? " (an IPv6 address in brackets, [::1]:8123)"
				       : "");
			return -EINVAL;
		}
		memcpy(s->host, host, n);
	}
	if (colon) {
		n = end - colon - 1;
		if (!n || n >= sizeof(s->port) || strspn(colon + 1, "0123456789") != n ||
		    atoi(colon + 1) < 1 || atoi(colon + 1) > 65535) {
			pr_err("bad URL '%s': bad port\n", url);
			return -EINVAL;
		}
		memcpy(s->port, colon + 1, n);
	} else {
		strcpy(s->port, s->tls ? "8443" : "8123");
	}
	if (*end == '/' && end[1]) {
		n = strcspn(end + 1, "/?#");
		if (n >= sizeof(s->job) || end[1 + n]) {
			pr_err("bad URL '%s': one job name after the port, nothing else\n", url);
			return -EINVAL;
		}
		memcpy(s->job, end + 1, n);
	} else if (*end && strcmp(end, "/")) {
		pr_err("bad URL '%s': one job name after the port, nothing else\n", url);
		return -EINVAL;
	}
	ca = env__trusted("BPFSIGHT_CLICKHOUSE_CA");
	if (ca && *ca && snprintf(s->ca, sizeof(s->ca), "%s", ca) >= (int)sizeof(s->ca)) {
		pr_err("BPFSIGHT_CLICKHOUSE_CA: too long\n");
		return -EINVAL;
	}
	return ch_credentials(s);
}
