// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options `record` and `monitor` share (record_args.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "proc_meta.h"
#include "kernel_features.h"
#include "record_args.h"
#include "msg.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

int record_args__fail(const char *cmd, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pr_err("%s\n", buf);
	return 1;
}

static int verbose_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int record_args__has_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

#define HAS(c) (d[(c) / 32].effective & (1u << ((c) % 32)))
	if (syscall(SYS_capget, &h, d))
		return 0;
	return HAS(CAP_SYS_ADMIN) || (HAS(CAP_BPF) && HAS(CAP_PERFMON));
#undef HAS
}

/* nsys's -t names of what bpfsight's families trace under another name. */
static const char *const nsys_names[][2] = {
	{ "python-gil", "gil" },
	{ "cublas-verbose", "cublas" },
	{ "cudnn-verbose", "cudnn" },
	{ "cuda-hw", "cuda" },
};

static const char *family_name(const char *tok)
{
	for (size_t i = 0; i < sizeof(nsys_names) / sizeof(nsys_names[0]); i++)
		if (!strcmp(tok, nsys_names[i][0]))
			return nsys_names[i][1];
	return tok;
}

int record_args__families(const char *cmd, const char *list, __u64 *mask, __u32 *explicit)
{
	char *copy = strdup(list), *save = NULL, *tok, fams[256];
	int ret = 0, named = 0;

	if (!copy)
		return 1;
	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *name = family_name(tok + (tok[0] == '+'));
		int found = 0;

		named += tok[0] != '+';
		for (int i = 0; families[i]; i++) {
			if (strcmp(families[i]->name, name) || (families[i]->flags & FAMILY_ALWAYS))
				continue;
			*mask |= 1ull << i;
			found = 1;
		}
		if (!found) {
			family__list_selectable(fams, sizeof(fams));
			ret = record_args__fail(
				cmd, "unknown family '%s' in -t; valid families: %s", tok, fams);
			break;
		}
	}
	free(copy);
	*explicit = named > 0;
	if (!ret && !named) /* only +NAME: the default set, and those */
		for (int i = 0; families[i]; i++)
			if (!(families[i]->flags & FAMILY_OPT_IN))
				*mask |= 1ull << i;
	if (!ret && !*mask)
		ret = record_args__fail(cmd, "-t needs at least one family");
	return ret;
}

int record_args__pids(const char *cmd, const char *arg, struct record_opts *o)
{
	char *copy = strdup(arg), *save = NULL, *tok, *end;
	int ret = 0;

	if (!copy)
		return 1;
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		long pid = strtol(tok, &end, 10);
		pid_t tgid;

		if (*end || pid <= 0 || pid > 0x7fffffff) {
			ret = record_args__fail(
				cmd, "bad pid '%s': give a process id, e.g. -p 1234", tok);
			break;
		}
		/* A thread id names its process: attach to the whole process. */
		tgid = proc_meta__tgid(pid);
		if (tgid < 0) {
			ret = record_args__fail(
				cmd, "no such process: %ld (is it still running? see `ps -p %ld`)",
				pid, pid);
			break;
		}
		if (!proc_meta__alive(tgid)) {
			ret = record_args__fail(
				cmd,
				"process %ld has exited (a zombie until its parent reaps it): "
				"nothing is left to trace",
				pid);
			break;
		}
		if (tgid == getpid()) {
			ret = record_args__fail(
				cmd, "-p %ld is bpfsight itself, which never traces itself", pid);
			break;
		}
		if (o->npids == RECORD_MAX_PIDS) {
			ret = record_args__fail(cmd, "too many -p (at most %d); use -a instead",
						RECORD_MAX_PIDS);
			break;
		}
		/* The start time tells the target from a later process given its recycled pid. */
		if (proc_meta__start(tgid, &o->pid_start[o->npids])) {
			ret = record_args__fail(
				cmd, "no such process: %ld (is it still running? see `ps -p %ld`)",
				pid, pid);
			break;
		}
		o->pids[o->npids++] = tgid;
	}
	free(copy);
	return ret;
}

void record_args__default_families(struct record_opts *o)
{
	if (!o->families_explicit && !o->families)
		for (int i = 0; families[i]; i++)
			if (!(families[i]->flags & FAMILY_OPT_IN))
				o->families |= 1ull << i;
	for (int i = 0; families[i]; i++) /* always-on families cannot be deselected */
		if (families[i]->flags & FAMILY_ALWAYS)
			o->families |= 1ull << i;
}

void record_args__libbpf_print(int verbose)
{
	libbpf_set_print(verbose ? verbose_print : quiet_print);
}

/*
 * Families whose kernel features are missing (family->needs): refused when -t names them,
 * else left out, said once each. Then the ring buffer, which every family needs.
 */
int record_args__check_kernel(const char *cmd, struct record_opts *o)
{
	for (int i = 0; families[i]; i++) {
		__u32 missing = 0;

		if (!(o->families & (1ull << i)))
			continue;
		for (int f = 0; f < KF_NR; f++)
			if ((families[i]->needs & (1u << f)) && !kfeature__has(f))
				missing |= 1u << f;
		for (int f = 0; missing && f < KF_NR; f++) {
			if (!(missing & (1u << f)))
				continue;
			if (o->families_explicit)
				return record_args__fail(
					cmd,
					"the %s family needs %s, which this kernel lacks "
					"(bpfsight record --features): drop it from -t",
					families[i]->name, kfeature__name(f));
			pr_err("not recording %s: this kernel lacks %s "
			       "(bpfsight record --features)\n",
			       families[i]->name, kfeature__name(f));
			o->families &= ~(1ull << i);
			break;
		}
	}
	if (!kfeature__has(KF_RINGBUF))
		return record_args__fail(cmd,
					 "this kernel has no BPF ring buffer (Linux 5.8 or later "
					 "needed)");
	return 0;
}
