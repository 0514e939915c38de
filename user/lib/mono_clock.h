/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* CLOCK_MONOTONIC in ns: the clock of every timestamp BPF writes (bpf_ktime_get_ns). */
#ifndef BPFSIGHT_MONO_CLOCK_H
#define BPFSIGHT_MONO_CLOCK_H

#include <time.h>
#include <linux/types.h>

static inline __u64 mono_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

#endif /* BPFSIGHT_MONO_CLOCK_H */
