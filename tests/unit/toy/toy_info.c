// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy's reorder hook: it passes every record on as it is and counts the ticks, which its
 * info hooks tell `bpfsight info` (struct family_reorder's info_text, info_json), as the gpu
 * family tells its GPU links.
 */
#include <stdlib.h>
#include "json.h"
#include "toy.h"

static void *reorder_new(const struct trace_meta *meta)
{
	(void)meta;
	return calloc(1, sizeof(__u64));
}

static int reorder_feed(void *st, const struct bs_hdr *rec)
{
	*(__u64 *)st += rec->type == TOY_REC;
	return 1;
}

static void reorder_end(void *st)
{
	(void)st;
}

static const struct bs_hdr *reorder_next(void *st)
{
	(void)st;
	return NULL;
}

/* NULL: the walk did not end, or no state could be made. */
static __u64 ticks(const void *st)
{
	return st ? *(const __u64 *)st : 0;
}

static void info_text(const void *st, FILE *f)
{
	fprintf(f, "toy ticks:       %llu\n", (unsigned long long)ticks(st));
}

static void info_json(const void *st, struct json *j)
{
	json__kv_u64(j, "toy_ticks", ticks(st));
}

const struct family_reorder toy_reorder = {
	.new = reorder_new,
	.feed = reorder_feed,
	.end = reorder_end,
	.next = reorder_next,
	.free = free,
	.without = "the toy's ticks are not counted",
	.info_text = info_text,
	.info_json = info_json,
};
