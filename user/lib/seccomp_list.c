// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A seccomp filter from a list of system call numbers (seccomp_list.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include "seccomp_list.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define X32_BIT	    0x40000000u /* x32's calls: the same numbers with this bit set */
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define X32_BIT	    0
#endif

#define STMT(code, k)	      ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP(code, k, jt, jf))

/* The statements of RULE's test: 1, or 4 with its first argument's. */
static unsigned int rule_len(const struct seccomp_rule *r)
{
	return r->arg0_only ? 4 : 1;
}

int seccomp_list__install(const struct seccomp_rule *rules, unsigned int n,
			  enum seccomp_list_kind kind, int all_threads)
{
#ifdef NATIVE_ARCH
	__u32 listed = kind == SECCOMP_LIST_ALLOW ? SECCOMP_RET_ALLOW : SECCOMP_RET_ERRNO | EPERM;
	__u32 other = kind == SECCOMP_LIST_ALLOW ? SECCOMP_RET_KILL_PROCESS : SECCOMP_RET_ALLOW;
	__u32 foreign = kind == SECCOMP_LIST_ALLOW ? other : listed;
	unsigned int i = 0, len = 6, at_listed;
	struct sock_filter *f;
	struct sock_fprog prog;
	long r;

	for (unsigned int k = 0; k < n; k++)
		len += rule_len(&rules[k]);
	at_listed = len + 1; /* the last statement; `other` before it */
	if (at_listed > 255)
		return -E2BIG; /* a jump's reach */
	f = calloc(len + 2, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f[i++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[i++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	f[i++] = STMT(BPF_RET | BPF_K, foreign);
	f[i++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	f[i++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT ?: ~0u, 0, 1);
	f[i++] = STMT(BPF_RET | BPF_K, foreign);
	/* Each rule jumps to the last statement, the listed calls' answer, when it matches. */
	for (unsigned int k = 0; k < n; k++) {
		const struct seccomp_rule *ru = &rules[k];

		if (!ru->arg0_only) {
			f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)ru->nr, at_listed - i - 1, 0);
			i++;
			continue;
		}
		f[i++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)ru->nr, 0, 3);
		f[i++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
		f[i] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, ru->arg0, at_listed - i - 1, 0);
		i++;
		f[i++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	}
	f[i++] = STMT(BPF_RET | BPF_K, other);
	f[i++] = STMT(BPF_RET | BPF_K, listed);
	prog.len = (unsigned short)i;
	prog.filter = f;
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    all_threads ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
	free(f);
	/* TSYNC's failure names a thread that could not take it: a positive id. */
	if (r > 0)
		return -EAGAIN;
	return r ? -errno : 0;
#else
	(void)rules;
	(void)n;
	(void)kind;
	(void)all_threads;
	return -ENOSYS;
#endif
}
