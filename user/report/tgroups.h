/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Named groups of measurements for the summary reports that group by text (a kernel's name,
 * an NVTX range's text, a copy operation): count, total, min, max and the samples behind
 * nsys's median and stddev, for up to TGROUP_NSTATS quantities per group (a launch's API
 * time, queue time and kernel time). Keys are (name, name2, tag): two strings (name2 may be
 * NULL) and a number, compared exactly; hashes only index them.
 */
#ifndef BPFSIGHT_TGROUPS_H
#define BPFSIGHT_TGROUPS_H

#include <stddef.h>
#include <linux/types.h>
#include "stats_math.h"

#define TGROUP_NSTATS 4

struct tstat {
	__u64 count, total, min, max;
	struct samples samples;
};

struct tgroup {
	char *name, *name2; /* copies; name2 NULL when the key has none */
	__u32 tag;
	struct tstat st[TGROUP_NSTATS];
};

struct tgroups;

struct tgroups *tgroups__new(void);
void tgroups__free(struct tgroups *g);
/* The group of the key, created empty on first use; NULL when out of memory. Valid until the
 * next call that creates a group. */
struct tgroup *tgroups__get(struct tgroups *g, const char *name, const char *name2, __u32 tag);
/* Add V to quantity I of T: 0 or -ENOMEM. */
int tgroup__add(struct tgroup *t, int i, __u64 v);
/* Every group, by quantity I's total descending, then by key; a malloc'ed array of *N (free
 * it), NULL when out of memory (an empty set gives a non-NULL array). */
struct tgroup **tgroups__sorted(struct tgroups *g, int i, size_t *n);
/* The sum of quantity I's totals over every group (time_pct's denominator). */
__u64 tgroups__grand(const struct tgroups *g, int i);

#endif /* BPFSIGHT_TGROUPS_H */
