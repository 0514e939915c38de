// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The options `record` and `monitor` share (record_args.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "family.h"
#include "family_record.h"
#include "getopt_error.h"
#include "proc_meta.h"
#include "kernel_features.h"
#include "nsys_args.h"
#include "record_args.h"
#include "record_ctx.h"
#include "msg.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int verbose_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return vfprintf(stderr, fmt, ap);
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	/*
	 * libbpf probes a kernel feature the first time an attach needs it, by loading a
	 * program: once the seccomp filter refuses new programs (privileges.c), the perf-link
	 * probe of a uprobe attached later (a library a process loads) fails and libbpf warns,
	 * then attaches the older way, which works the same. Said with -v only.
	 */
	if (strstr(fmt, "Detection of kernel "))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Add the family NAME (not an always-on one) to *MASK: 1 when there is one. */
static int add_family(const char *name, __u64 *mask)
{
	int found = 0;

	for_each_family(it) {
		if (strcmp(it.f->name, name) || (it.f->flags & FAMILY_ALWAYS))
			continue;
		*mask |= 1ull << it.i;
		found = 1;
	}
	return found;
}

/*
 * An nsys -t name bpfsight does not have itself (python-gil, cuda-hw): its families into
 * *MASK, as `profile` reads it (nsys_args.h). 1 when nsys knows it and bpfsight records it.
 */
static int add_nsys_name(const char *name, __u64 *mask)
{
	char copy[128], *save = NULL, *tok;
	const char *ours;
	int ok = 1;

	if (!nsys_args__trace(name, &ours) || !ours)
		return 0;
	snprintf(copy, sizeof(copy), "%s", ours);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		ok &= add_family(tok, mask);
	return ok;
}

/* The selectable family closest to NAME (a typo's distance: "gli" -> gil), or NULL. */
static const char *closest_family(const char *name)
{
	const char *names[RECORD_MAX_FAMILIES + 1];
	int n = 0;

	for_each_family_while(fit, n < RECORD_MAX_FAMILIES)
		if (!(fit.f->flags & FAMILY_ALWAYS))
			names[n++] = fit.f->name;
	names[n] = NULL;
	return getopt_error__closest_word(name, names);
}

int record_args__families(const char *cmd, const char *list, __u64 *mask, __u32 *explicit,
			  __u64 *named_mask)
{
	char *copy = strdup(list), *save = NULL, *tok, fams[256];
	int ret = 0, named = 0;

	if (!copy)
		return 1;
	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const char *name = tok + (tok[0] == '+'), *ours;

		named += tok[0] != '+';
		if (!add_family(name, mask) && !add_nsys_name(name, mask)) {
			if (nsys_args__trace(name, &ours) && !ours) {
				ret = msg__fail(
					"-t %s: nsys traces %s; bpfsight has no family for it",
					name, name);
				break;
			}
			family__list_selectable(fams, sizeof(fams));
			ret = msg__fail("unknown family '%s' in -t%s%s%s; valid families: %s", tok,
					closest_family(name) ? " (did you mean " : "",
					closest_family(name) ? closest_family(name) : "",
					closest_family(name) ? "?)" : "", fams);
			break;
		}
	}
	free(copy);
	*named_mask = *mask;
	*explicit = named > 0;
	if (!ret && !named) /* only +NAME: the default set, and those */
		for_each_family(it)
			if (!(it.f->flags & FAMILY_OPT_IN))
				*mask |= 1ull << it.i;
	if (!ret && !*mask)
		ret = msg__fail("-t needs at least one family");
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
			ret = msg__fail("bad pid '%s': give a process id, e.g. -p 1234", tok);
			break;
		}
		/* A thread id names its process: attach to the whole process. */
		tgid = proc_meta__tgid(pid);
		if (tgid < 0) {
			ret = msg__fail(
				"no such process: %ld (is it still running? see `ps -p %ld`)", pid,
				pid);
			break;
		}
		if (!proc_meta__alive(tgid)) {
			ret = msg__fail(
				"process %ld has exited (a zombie until its parent reaps it): "
				"nothing is left to trace",
				pid);
			break;
		}
		if (tgid == getpid()) {
			ret = msg__fail("-p %ld is bpfsight itself, which never traces itself",
					pid);
			break;
		}
		if (o->npids == RECORD_MAX_PIDS) {
			ret = msg__fail("too many -p (at most %d); use -a instead",
					RECORD_MAX_PIDS);
			break;
		}
		/* The start time tells the target from a later process given its recycled pid. */
		if (proc_meta__start(tgid, &o->pid_start[o->npids])) {
			ret = msg__fail(
				"no such process: %ld (is it still running? see `ps -p %ld`)", pid,
				pid);
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
		for_each_family(it)
			if (!(it.f->flags & FAMILY_OPT_IN))
				o->families |= 1ull << it.i;
	for_each_family(it) /* always-on families cannot be deselected */
		if (it.f->flags & FAMILY_ALWAYS)
			o->families |= 1ull << it.i;
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
	for_each_family(it) {
		__u32 missing = 0;

		if (!(o->families & (1ull << it.i)))
			continue;
		for (int f = 0; f < KF_NR; f++)
			if ((it.f->record->needs & (1u << f)) && !kfeature__has(f))
				missing |= 1u << f;
		for (int f = 0; missing && f < KF_NR; f++) {
			if (!(missing & (1u << f)))
				continue;
			if (o->families_explicit)
				return msg__fail("the %s family needs %s, which this kernel lacks "
						 "(bpfsight record --features): drop it from -t",
						 it.f->name, kfeature__name(f));
			pr_err("not recording %s: this kernel lacks %s "
			       "(bpfsight record --features)\n",
			       it.f->name, kfeature__name(f));
			o->families &= ~(1ull << it.i);
			break;
		}
	}
	if (!kfeature__has(KF_RINGBUF))
		return msg__fail("this kernel has no BPF ring buffer (Linux 5.8 or later "
				 "needed)");
	return 0;
}

/* "cudaProfilerApi, nvtx:NAME": the kinds the families offer, for errors and --help. */
static void capture_kinds(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for_each_family_while(fit, used < len)
		if (fit.f->record->capture)
			used += snprintf(buf + used, len - used, "%s%s%s", used ? ", " : "",
					 fit.f->record->capture->kind,
					 fit.f->record->capture->arg ? fit.f->record->capture->arg
								     : "");
}

int record_args__capture(const char *cmd, const char *arg, struct record_opts *o)
{
	char kinds[256];

	if (o->capture)
		return msg__fail("--capture-range given twice: one range kind per recording");
	for_each_family(it) {
		const struct family_capture *c = it.f->record->capture;
		size_t n = c ? strlen(c->kind) : 0;

		if (!c || strncmp(arg, c->kind, n))
			continue;
		if (c->arg ? arg[n] != ':' || !arg[n + 1] : arg[n] != 0)
			continue;
		o->capture = it.f;
		o->capture_arg = c->arg ? arg + n + 1 : NULL;
		return c->check ? c->check(o->capture_arg, cmd) : 0;
	}
	capture_kinds(kinds, sizeof(kinds));
	return msg__fail("bad --capture-range '%s': use %s", arg, kinds);
}
