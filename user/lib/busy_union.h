/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Busy time of a device as the union of its kernels' intervals, counted as they arrive in
 * any order (CUPTI hands over each stream's records in its own batches): a counter that
 * only goes up, where overlapping kernels (streams running at once) count once.
 */
#ifndef BPFSIGHT_BUSY_UNION_H
#define BPFSIGHT_BUSY_UNION_H

#include <linux/types.h>
#include <stddef.h>

/*
 * Covered time is remembered for BUSY_UNION_KEEP_NS behind the latest end seen: an interval
 * arriving later than that after its neighbours is counted whole (it may then count time
 * already counted). The shim flushes its records within a second.
 */
#define BUSY_UNION_KEEP_NS (5ull * 1000000000ull)

struct busy_span {
	__u64 start, end;
};

struct busy_union {
	struct busy_span *spans; /* disjoint, sorted by start */
	size_t n, cap;
	__u64 latest_end; /* the latest end of any interval seen */
	__u64 busy_ns;	  /* the union's length so far */
};

/* Adds [START, END): the union grows by the part not covered yet. -1 on no memory. */
int busy_union__add(struct busy_union *u, __u64 start, __u64 end);
void busy_union__free(struct busy_union *u);

#endif
