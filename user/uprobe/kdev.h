/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The kernel's internal dev_t, as BPF reads it from s_dev and /proc/PID/maps shows it. */
#ifndef BPFSIGHT_KDEV_H
#define BPFSIGHT_KDEV_H

#include <linux/types.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

static inline __u64 kdev(unsigned int major, unsigned int minor)
{
	return (__u64)major << 20 | minor;
}

/* A dev_t from stat(2), in the kernel's encoding. */
static inline __u64 kdev_of(dev_t d)
{
	return kdev(major(d), minor(d));
}

#endif /* BPFSIGHT_KDEV_H */
