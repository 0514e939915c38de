/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Summary statistics shared by the stats reports, with nsys's semantics: the median of an
 * even count is the mean of the two middle values, stddev is the population one. Samples
 * carry a weight so that a pre-aggregated group (count calls, known total) can stand in as
 * COUNT samples at its mean without materializing them.
 *
 * Also a small hash map with 128-bit keys, for the per-thread / per-key state of reports.
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

/*
 * Room for one more element of SIZE bytes in the array *V of *N (capacity *CAP, doubled from
 * 256): 0 or -ENOMEM (*V unchanged).
 */
int array__grow(void **v, size_t n, size_t *cap, size_t size);

struct hkey {
	__u64 a, b;
};

struct hmap;

/* Values are VAL_SIZE bytes, zeroed on creation, stored inline. */
struct hmap *hmap__new(size_t val_size);
void hmap__free(struct hmap *m);
/*
 * The value of KEY; created when absent and CREATE is set. NULL when absent (or out of
 * memory). Inserting may move every value: do not keep pointers across a creating call.
 */
void *hmap__get(struct hmap *m, struct hkey key, int create);
size_t hmap__count(const struct hmap *m);
/* Remove KEY (nothing when absent); like an insert, it may move other values. */
void hmap__del(struct hmap *m, struct hkey key);
/* Iterate: start with *iter = 0; returns the next value (and its key) or NULL at the end. */
void *hmap__next(const struct hmap *m, size_t *iter, struct hkey *key);
/* Remove every key whose half A (WHICH 0) or B (WHICH 1) is V: a process's entries. */
void hmap__del_all(struct hmap *m, int which, __u64 v);

#endif /* BPFSIGHT_STATS_MATH_H */
