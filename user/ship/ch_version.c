// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A ClickHouse server's release: ch_version.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ch_http.h"
#include "ch_version.h"
#include "msg.h"

int ch_version__parse(const char *text, struct ch_version *v)
{
	unsigned major, minor;
	int n = 0;

	if (!text || sscanf(text, "%u.%u%n", &major, &minor, &n) != 2 || !major)
		return -EINVAL;
	v->major = major;
	v->minor = minor;
	snprintf(v->text, sizeof(v->text), "%.*s", (int)strcspn(text, " \t\r\n"), text);
	return 0;
}

int ch_version__at_least(const struct ch_version *v, unsigned major, unsigned minor)
{
	return v->major > major || (v->major == major && v->minor >= minor);
}

int ch_version__ask(struct ch_server *s)
{
	char w[300], *out = NULL;
	int err;

	if (s->version.major)
		return 0;
	err = ch_server__run(s, "SELECT version()", NULL, 0, &out);
	if (err)
		return err;
	err = ch_version__parse(out, &s->version);
	ch_server__where(s, w, sizeof(w));
	if (err) {
		snprintf(s->error, sizeof(s->error),
			 "%s: not a ClickHouse server's answer to SELECT version(): %.60s", w,
			 out ? out : "");
		free(out);
		return -EPROTO;
	}
	free(out);
	if (s->verbose)
		pr_info("ClickHouse %s at %s\n", s->version.text, w);
	if (!ch_version__at_least(&s->version, CH_OLDEST_MAJOR, CH_OLDEST_MINOR)) {
		snprintf(
			s->error, sizeof(s->error),
			"%s runs ClickHouse %s, older than %s, the oldest release bpfsight's SQL is "
			"tested on (docs/CLICKHOUSE.md): nothing sent",
			w, s->version.text, CH_OLDEST);
		s->version = (struct ch_version){ 0 };
		return -EPROTO;
	}
	return 0;
}
