/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Summary statistics shared by the stats reports, with nsys's semantics: the median of an
 * even count is the mean of the two middle values, stddev is the population one. Samples
 * carry a weight so that a pre-aggregated group (count calls, known total) can stand in as
 * COUNT samples at its mean without materializing them.
 */
#ifndef BPFSIGHT_STATS_MATH_H
#define BPFSIGHT_STATS_MATH_H

#include <stddef.h>
#include <linux/types.h>

struct sample {
	double value;
	__u64 weight;
};

struct samples {
	struct sample *v;
	size_t n, cap;
	__u64 count; /* sum of weights */
	int sorted;
};

/* A zeroed struct samples is empty and ready. */
int samples__add(struct samples *s, double value, __u64 weight); /* 0 or -ENOMEM */
double samples__mean(const struct samples *s);
double samples__stddev(const struct samples *s);	 /* population; 0 when empty */
double samples__percentile(struct samples *s, double p); /* 0..100, linear; sorts */
double samples__median(struct samples *s);		 /* percentile 50 */
void samples__free(struct samples *s);

#endif /* BPFSIGHT_STATS_MATH_H */
