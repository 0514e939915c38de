// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The boundaries mem_leaks compares a site's live bytes at (mem_leak_bounds.h). */
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "mem_leak_bounds.h"
#include "mem_log.h"
#include "mem_period.h"
#include "mem_report.h"
#include "steps.h"

const char *const mem_per_names[] = { "window", "step", "loop" };
const char *const mem_per_plural[] = { "windows", "steps", "passes" };

/* PID's steps as boundaries into B, when it has enough. */
static void step_bounds(const struct steps *steps, __u32 pid, struct mem_dev_bounds *b)
{
	size_t n;
	const struct step_span *v = steps__of(steps, pid, &n);

	if (n < MEM_GROW_MIN_STEPS)
		return;
	b->group = (__u32)((n + MEM_MAX_BOUNDS - 1) / MEM_MAX_BOUNDS);
	b->k = (__u32)(n / b->group);
	b->bounds[0] = v[0].ts;
	for (__u32 i = 1; i <= b->k; i++)
		b->bounds[i] = v[(size_t)i * b->group - 1].end;
	b->per = MEM_PER_STEP;
}

/* The thread of device DEV that made most of its allocations. */
static __u32 main_thread(const struct mem_log *l, __u32 dev)
{
	struct hmap *count = hmap__new(sizeof(__u64));
	__u64 *c, most = 0;
	__u32 tid = 0;

	for (size_t i = 0; count && i < l->n; i++)
		if (l->v[i].dev == dev &&
		    (c = hmap__get(count, (struct hkey){ l->v[i].tid, 0 }, 1)) && ++*c > most) {
			most = *c;
			tid = l->v[i].tid;
		}
	hmap__free(count);
	return tid;
}

/*
 * Without steps, the passes of the device's loop where its main thread's allocations repeat
 * (mem_period.h): each boundary just before an allocation of the anchor's size (one a pass)
 * at least half a pass after the last, so every boundary is the same point of the loop
 * however its allocations shift within a pass.
 */
static void loop_bounds(const struct mem_log *l, __u32 dev, struct mem_dev_bounds *b)
{
	__u32 tid = main_thread(l, dev);
	__u64 *sizes = malloc((l->devs[dev].allocs + 1) * sizeof(*sizes)),
	      *ts = malloc((l->devs[dev].allocs + 1) * sizeof(*ts));
	size_t n = 0, starts = 0, last = 0;
	struct mem_period per;

	for (size_t i = 0; sizes && ts && i < l->n; i++)
		if (l->v[i].dev == dev && l->v[i].tid == tid && n < l->devs[dev].allocs) {
			sizes[n] = l->v[i].bytes;
			ts[n++] = l->v[i].ts;
		}
	if (!n || mem_period__find(sizes, n, MEM_GROW_MIN_STEPS + 1, &per))
		goto out;
	/* the passes' starts, in place of the sizes */
	for (size_t i = 0; i < n; i++)
		if (sizes[i] == per.anchor && (!starts || i - last >= per.period / 2)) {
			sizes[starts++] = ts[i] - 1;
			last = i;
		}
	if (starts < MEM_GROW_MIN_STEPS + 1)
		goto out;
	b->group = (__u32)((starts - 1 + MEM_MAX_BOUNDS - 1) / MEM_MAX_BOUNDS);
	b->k = (__u32)((starts - 1) / b->group);
	for (__u32 j = 0; j <= b->k; j++)
		b->bounds[j] = sizes[(size_t)j * b->group];
	b->per = MEM_PER_LOOP;
out:
	free(sizes);
	free(ts);
}

/*
 * Without steps, the device's allocations in MEM_GROW_WINDOWS windows of as many each (a
 * step of a loop makes the same allocations, however long it waits between them): each
 * window ends at its last allocation, the last one at the device's last record, and bounds[0]
 * is before its first. Filled for every device in one pass over the log.
 */
static void window_bounds(const struct mem_log *l, struct mem_dev_bounds *b)
{
	__u64 *seen = calloc(2 * l->ndevs + 1, sizeof(*seen)), *next = seen + l->ndevs;

	for (size_t d = 0; d < l->ndevs; d++) {
		if (b[d].per != MEM_PER_WINDOW)
			continue;
		b[d].group = 1;
		b[d].k = seen && l->devs[d].allocs >= MEM_GROW_WINDOWS ? MEM_GROW_WINDOWS : 0;
		b[d].bounds[0] = l->devs[d].first_ts ? l->devs[d].first_ts - 1 : 0;
		b[d].bounds[b[d].k] = l->devs[d].last_ts;
		if (seen)
			next[d] = 1;
	}
	for (size_t i = 0; seen && i < l->n; i++) {
		struct mem_dev_bounds *db = &b[l->v[i].dev];
		__u64 n = ++seen[l->v[i].dev], all = l->devs[l->v[i].dev].allocs;
		__u64 *j = &next[l->v[i].dev];

		/* Window j (1-based) ends at the device's allocation ceil(j * all / k). */
		if (db->per == MEM_PER_WINDOW && *j < db->k && n == (*j * all + db->k - 1) / db->k)
			db->bounds[(*j)++] = l->v[i].ts;
	}
	free(seen);
}

/*
 * Allocations made before stacks were taken (attached: during the first scan) stand in no
 * row: the boundaries up to the last of them are dropped, so no step is judged by them (a
 * leak would not grow in those).
 */
static void since_stacks(struct mem_dev_bounds *b, __u64 early_ts)
{
	__u32 drop = 0;

	while (early_ts && drop <= b->k && b->bounds[drop] <= early_ts)
		drop++;
	if (!drop)
		return;
	b->k = drop <= b->k ? b->k - drop : 0;
	memmove(b->bounds, b->bounds + drop, (b->k + 1) * sizeof(*b->bounds));
}

__u32 mem_leak_bounds__at(const struct mem_dev_bounds *b, __u64 ts)
{
	__u32 lo = 0, hi = b->k + 1;

	while (lo < hi) {
		__u32 mid = lo + (hi - lo) / 2;

		if (b->bounds[mid] < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct mem_dev_bounds *mem_leak_bounds__of(const struct mem_log *l, const struct steps *steps)
{
	struct mem_dev_bounds *b = calloc(l->ndevs + 1, sizeof(*b));

	if (!b)
		return NULL;
	for (size_t d = 0; d < l->ndevs; d++) {
		b[d].bounds = calloc(MEM_MAX_BOUNDS + MEM_GROW_WINDOWS + 1, sizeof(__u64));
		if (!b[d].bounds) {
			mem_leak_bounds__free(b, l->ndevs);
			return NULL;
		}
		step_bounds(steps, l->devs[d].pid, &b[d]);
		if (b[d].per == MEM_PER_WINDOW)
			loop_bounds(l, (__u32)d, &b[d]);
	}
	window_bounds(l, b);
	for (size_t d = 0; d < l->ndevs; d++)
		since_stacks(&b[d], l->devs[d].early_ts);
	return b;
}

void mem_leak_bounds__free(struct mem_dev_bounds *b, size_t ndevs)
{
	for (size_t d = 0; b && d < ndevs; d++)
		free(b[d].bounds);
	free(b);
}
