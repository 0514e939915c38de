// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "string_pool.h"

/* Open addressing on a power-of-two table; strings are owned by the pool. */
struct string_pool {
	char **keys;
	__u32 *ids;
	__u32 cap, used, next_id;
	__u64 bytes;
};

static __u64 hash_str(const char *s)
{
	__u64 h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

struct string_pool *string_pool__new(void)
{
	struct string_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cap = 256;
	p->keys = calloc(p->cap, sizeof(*p->keys));
	p->ids = calloc(p->cap, sizeof(*p->ids));
	p->next_id = 1;
	if (!p->keys || !p->ids) {
		string_pool__free(p);
		return NULL;
	}
	return p;
}

void string_pool__free(struct string_pool *p)
{
	if (!p)
		return;
	for (__u32 i = 0; p->keys && i < p->cap; i++)
		free(p->keys[i]);
	free(p->keys);
	free(p->ids);
	free(p);
}

static int grow(struct string_pool *p)
{
	__u32 ncap = p->cap * 2;
	char **nkeys = calloc(ncap, sizeof(*nkeys));
	__u32 *nids = calloc(ncap, sizeof(*nids));

	if (!nkeys || !nids) {
		free(nkeys);
		free(nids);
		return -1;
	}
	for (__u32 i = 0; i < p->cap; i++) {
		__u32 j;

		if (!p->keys[i])
			continue;
		for (j = hash_str(p->keys[i]) & (ncap - 1); nkeys[j]; j = (j + 1) & (ncap - 1))
			;
		nkeys[j] = p->keys[i];
		nids[j] = p->ids[i];
	}
	free(p->keys);
	free(p->ids);
	p->keys = nkeys;
	p->ids = nids;
	p->cap = ncap;
	return 0;
}

__u32 string_pool__intern(struct string_pool *p, const char *s, int *is_new)
{
	__u32 i;

	*is_new = 0;
	if ((p->used + 1) * 4 > p->cap * 3 && grow(p))
		return 0;
	for (i = hash_str(s) & (p->cap - 1); p->keys[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->keys[i], s))
			return p->ids[i];
	p->keys[i] = strdup(s);
	if (!p->keys[i])
		return 0;
	p->ids[i] = p->next_id++;
	p->used++;
	p->bytes += strlen(s) + 1;
	*is_new = 1;
	return p->ids[i];
}

__u32 string_pool__find(const struct string_pool *p, const char *s)
{
	for (__u32 i = hash_str(s) & (p->cap - 1); p->keys[i]; i = (i + 1) & (p->cap - 1))
		if (!strcmp(p->keys[i], s))
			return p->ids[i];
	return 0;
}

__u64 string_pool__bytes(const struct string_pool *p)
{
	return p->bytes;
}
