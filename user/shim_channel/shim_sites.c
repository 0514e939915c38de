// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A cupti-shim's probe sites (shim_sites.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shim_cookie.h"
#include "shim_sites.h"

int shim_sites__probe_id(const char *name)
{
	static const char *const names[] = { [SHIM_PROBE_BATCH] = "batch",
					     [SHIM_PROBE_DRAIN] = "drain",
					     [SHIM_PROBE_JOIN] = "join" };

	for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (names[i] && !strcmp(name, names[i]))
			return i;
	return 0;
}

int shim_sites__add(struct sites *s, __u64 off, __u64 ref, __u64 cookie)
{
	__u64 *o = realloc(s->off, (s->n + 1) * sizeof(*o)), *r, *c;

	if (!o)
		return -ENOMEM;
	s->off = o;
	r = realloc(s->ref, (s->n + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->ref = r;
	c = realloc(s->cookie, (s->n + 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	s->cookie = c;
	s->off[s->n] = off;
	s->ref[s->n] = ref;
	s->cookie[s->n++] = cookie;
	return 0;
}

void shim_sites__free(struct sites *s)
{
	free(s->off);
	free(s->ref);
	free(s->cookie);
	memset(s, 0, sizeof(*s));
}
