// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Waiting time per process per bin, for the exports' GIL contention counters. */
#include <errno.h>
#include <stdlib.h>
#include "gil_contention.h"
#include "hmap.h"
#include "gil_records.h"

struct gil_contention {
	struct hmap *procs; /* {pid, 0} -> struct time_bins */
	__u64 width;
};

struct gil_contention *gil_contention__new(__u64 width)
{
	struct gil_contention *gc = calloc(1, sizeof(*gc));

	if (!gc)
		return NULL;
	gc->width = width;
	gc->procs = hmap__new(sizeof(struct time_bins));
	if (!gc->procs) {
		free(gc);
		return NULL;
	}
	return gc;
}

void gil_contention__free(struct gil_contention *gc)
{
	struct time_bins *b;
	size_t it = 0;

	if (!gc)
		return;
	while ((b = hmap__next(gc->procs, &it, NULL)))
		time_bins__free(b);
	hmap__free(gc->procs);
	free(gc);
}

int gil_contention__add(struct gil_contention *gc, const struct bs_hdr *rec, __u64 origin)
{
	const struct bs_gil_wait *w = (const void *)rec;
	struct time_bins *b;

	if (rec->type != BS_REC_GIL_WAIT || rec->size < sizeof(*w))
		return 0;
	b = hmap__get(gc->procs, (struct hkey){ rec->pid, 0 }, 1);
	if (!b)
		return -ENOMEM;
	if (!b->width)
		time_bins__init(b, origin, gc->width);
	return time_bins__add(b, rec->ts, w->dur);
}

const struct time_bins *gil_contention__next(const struct gil_contention *gc, size_t *it,
					     __u32 *pid)
{
	const struct time_bins *b;
	struct hkey key;

	b = hmap__next(gc->procs, it, &key);
	if (b)
		*pid = (__u32)key.a;
	return b;
}
