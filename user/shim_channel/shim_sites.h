/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A cupti-shim's USDT probe sites as the channel attaches them (bpf/shim_cookie.h). */
#ifndef BPFSIGHT_SHIM_SITES_H
#define BPFSIGHT_SHIM_SITES_H

#include <linux/types.h>
#include "usdt_notes.h"

/* Probe sites of one kind in a file: offsets, semaphores, cookies. */
struct sites {
	__u64 *off, *ref, *cookie;
	__u32 n;
};

/* SHIM_PROBE_* of the channel's own probe NAME (batch, drain, join); 0 for any other. */
int shim_sites__probe_id(const char *name);
/* One more site in S: 0 or -ENOMEM. */
int shim_sites__add(struct sites *s, __u64 off, __u64 ref, __u64 cookie);
/* S emptied (it can be added to again). */
void shim_sites__free(struct sites *s);

#endif /* BPFSIGHT_SHIM_SITES_H */
