// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Dropping what recording does not need (privileges.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/bpf.h>
#include <linux/types.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "kallsyms.h"
#include "privileges.h"
#include "seccomp_list.h"

#define BIT(c) (1ull << (c))

/* The process's permitted (EFFECTIVE 0) or effective capabilities, 1 << CAP_* each; 0 on error. */
static __u64 caps_now(int effective)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return 0;
	return effective ? d[0].effective | (__u64)d[1].effective << 32
			 : d[0].permitted | (__u64)d[1].permitted << 32;
}

static __u64 permitted_now(void)
{
	return caps_now(0);
}

int privileges__can_trace(void)
{
	__u64 e = caps_now(1);

	return !!(e & BIT(CAP_SYS_ADMIN)) || ((e & BIT(CAP_BPF)) && (e & BIT(CAP_PERFMON)));
}

int privileges__limit(__u64 keep)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	keep &= permitted_now();
	/* The bounding set first: dropping from it takes CAP_SETPCAP, which goes next. */
	for (int c = 0; c < 64; c++)
		if (!(keep & BIT(c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL)
			break; /* past the kernel's last capability */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	d[0].permitted = d[0].effective = (__u32)keep;
	d[1].permitted = d[1].effective = (__u32)(keep >> 32);
	if (syscall(SYS_capset, &h, d))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/*
 * 1 where perf_event_paranoid is above 2: Debian's and Ubuntu's kernels (their patch
 * "perf: Allow further restriction of perf_event_open", level 3 their default) then refuse
 * every perf_event_open without CAP_SYS_ADMIN, CAP_PERFMON or not: the cpu family's
 * sampling timers, the start's and end's thread samples (EACCES on Debian 12's 6.1 once the
 * recorder had dropped it). Upstream kernels read any level above 2 as 2.
 */
static int perf_wants_sys_admin(void)
{
	char buf[16] = { 0 };
	int fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC), n = -1;

	if (fd >= 0) {
		n = (int)read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	return n > 0 && strtol(buf, NULL, 10) > 2;
}

int privileges__drop(int writes_later, int (*keeper)(void))
{
	static int dropped;
	__u64 have = permitted_now(), keep;

	if (dropped++)
		return 0;
	keep = BIT(CAP_BPF) | BIT(CAP_PERFMON) | BIT(CAP_SYS_PTRACE) | BIT(CAP_DAC_READ_SEARCH) |
	       BIT(CAP_CHECKPOINT_RESTORE) | BIT(CAP_SYS_RESOURCE) | BIT(CAP_SYS_NICE) |
	       (writes_later ? BIT(CAP_DAC_OVERRIDE) : 0);
	/*
	 * Kernels before 5.8 have neither CAP_BPF nor CAP_PERFMON: BPF needs CAP_SYS_ADMIN
	 * there; a kernel whose perf_event_paranoid is above 2 asks it of every perf event.
	 * Elsewhere it goes, and what needs it later (the perf-event uprobes:
	 * uprobe_broker.h) is done by a process KEEPER forks now, which keeps it.
	 */
	if (!(have & BIT(CAP_BPF)) || !(have & BIT(CAP_PERFMON)) || perf_wants_sys_admin() ||
	    ((have & BIT(CAP_SYS_ADMIN)) && (!keeper || keeper())))
		keep |= BIT(CAP_SYS_ADMIN);
	/* Kernel addresses are read later, without CAP_SYSLOG (the cpu family's fault handler). */
	kallsyms__hold();
	return privileges__limit(keep);
}

/*
 * A deny-list: the recorder calls too much through libbpf and libc (and the kernel's
 * answers change what libbpf calls next) for an allow-list to be safe; a call nobody
 * foresaw must not kill a recording. What it denies is what a recorder taken over would
 * want first, and what recording never does once attached.
 */
static const struct seccomp_rule denied[] = {
	/* No program run: CMD was forked before; the link reaper's children only close links. */
	{ SYS_execve },
	{ SYS_execveat },
	/*
	 * No BPF program loaded once every family is attached (later probes attach the
	 * programs loaded at the start): with CAP_BPF and CAP_PERFMON a program reads the
	 * kernel's memory and writes any process's.
	 */
	{ SYS_bpf, 1, BPF_PROG_LOAD },
	/* Another process's memory written (--inject's calls need it, and ptrace). */
	{ SYS_process_vm_writev },
	/* Mounts, namespaces, roots. */
	{ SYS_mount },
	{ SYS_umount2 },
	{ SYS_pivot_root },
	{ SYS_chroot },
	{ SYS_unshare },
	{ SYS_setns },
	{ SYS_fsopen },
	{ SYS_fsmount },
	{ SYS_fsconfig },
	{ SYS_fspick },
	{ SYS_move_mount },
	{ SYS_open_tree },
	{ SYS_mount_setattr },
	/* Files by handle: with CAP_DAC_READ_SEARCH, any file of a mounted file system. */
	{ SYS_name_to_handle_at },
	{ SYS_open_by_handle_at },
	/* The kernel, the machine, the clock, the keys. */
	{ SYS_init_module },
	{ SYS_finit_module },
	{ SYS_delete_module },
	{ SYS_kexec_load },
	{ SYS_kexec_file_load },
	{ SYS_reboot },
	{ SYS_swapon },
	{ SYS_swapoff },
	{ SYS_acct },
	{ SYS_settimeofday },
	{ SYS_clock_settime },
	{ SYS_clock_adjtime },
	{ SYS_adjtimex },
	{ SYS_sethostname },
	{ SYS_setdomainname },
	{ SYS_keyctl },
	{ SYS_add_key },
	{ SYS_request_key },
	{ SYS_userfaultfd },
#ifdef SYS_iopl
	{ SYS_iopl },
	{ SYS_ioperm },
#endif
	/* Another process's control (--inject's, which keeps it). */
	{ SYS_ptrace },
};

int privileges__confine(int injects, int writes, const char **check)
{
	unsigned int n = sizeof(denied) / sizeof(denied[0]);
	const struct seccomp_rule *r = denied;
	struct seccomp_rule keep[sizeof(denied) / sizeof(denied[0])];
	int err;

	if (injects || writes) { /* process_vm_writev (and ptrace, to inject) stay allowed */
		n = 0;
		for (unsigned int i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
			if (denied[i].nr != SYS_process_vm_writev &&
			    (!injects || denied[i].nr != SYS_ptrace))
				keep[n++] = denied[i];
		r = keep;
	}
	err = seccomp_list__install(r, n, SECCOMP_LIST_DENY, 1);
	if (err)
		return err;
	/* A call of the list with an empty path: EPERM from the filter, ENOENT without it. */
	*check = syscall(SYS_execveat, AT_FDCWD, "", NULL, NULL, 0) < 0 && errno == EPERM
			 ? "execveat refused (EPERM)"
			 : "execveat not refused";
	return 0;
}
