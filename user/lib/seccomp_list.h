/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A seccomp filter from a list of system call numbers: either only those are allowed (the
 * uprobe broker), or those are denied and everything else allowed (the recorder, which calls
 * too much through libbpf and libc to list what it needs, and must not be killed by a call
 * nobody foresaw).
 */
#ifndef BPFSIGHT_SECCOMP_LIST_H
#define BPFSIGHT_SECCOMP_LIST_H

#include <linux/types.h>

enum seccomp_list_kind {
	SECCOMP_LIST_ALLOW, /* only the listed calls run; any other kills the process */
	SECCOMP_LIST_DENY,  /* the listed calls fail with EPERM; any other runs */
};

/* One listed call: NR, or NR only when its first argument is ARG0 (bpf's command). */
struct seccomp_rule {
	int nr;
	int arg0_only;
	__u32 arg0;
};

/*
 * Install the filter of the N RULES on the calling thread, and with ALL_THREADS on every
 * thread of the process (SECCOMP_FILTER_FLAG_TSYNC). A call of another architecture's ABI
 * (i386's int 0x80, x32) is treated as unlisted for ALLOW and denied for DENY, so that no
 * second table of numbers gets around the list. Needs no_new_privs (or CAP_SYS_ADMIN). 0, or
 * a negative errno (-ENOSYS on an architecture this does not know).
 */
int seccomp_list__install(const struct seccomp_rule *rules, unsigned int n,
			  enum seccomp_list_kind kind, int all_threads);

#endif /* BPFSIGHT_SECCOMP_LIST_H */
