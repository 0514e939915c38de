// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The osrt family's options: --osrt-threshold (record and monitor, their own defaults) and
 * --osrt-mode (exact: every system call through sys_enter/sys_exit; blocked: only the calls
 * that sleep, from the context switches, so the machine's other calls pay nothing).
 */
#include <stdio.h>
#include <string.h>
#include "osrt.h"
#include "family_record.h"
#include "parse.h"
#include "msg.h"
#include "record_ctx.h"

/*
 * record keeps every call of at least 1 us as a record (syscalls shorter than that are mostly
 * the vDSO's misses); monitor only makes histograms, and the in-kernel count is cheaper.
 */
#define RECORD_THRESHOLD_NS  1000ull
#define MONITOR_THRESHOLD_NS 100000ull

void osrt_opts_init(void *opts, const char *cmd)
{
	struct osrt_opts *oo = opts;

	oo->always_on = !strcmp(cmd, "monitor");
	oo->threshold_ns = oo->always_on ? MONITOR_THRESHOLD_NS : RECORD_THRESHOLD_NS;
}

static int parse_mode(void *opts, const char *arg, const char *cmd)
{
	struct osrt_opts *oo = opts;

	if (!strcmp(arg, "exact"))
		oo->mode = OSRT_MODE_EXACT;
	else if (!strcmp(arg, "blocked"))
		oo->mode = OSRT_MODE_BLOCKED;
	else
		return msg__fail("bad --osrt-mode '%s': use exact or blocked", arg);
	return 0;
}

/*
 * Where nobody asked for every call, nobody pays for it: the always-on commands (monitor,
 * --flight-recorder) and a recording of a running job (-p) with the default families see the
 * calls that block (a syscall-heavy job pays 1.02x, not 1.88x: bench/RESULTS.md "osrt
 * modes"); a launched or system-wide recording, top's live view, a -t that names osrt, or
 * --stacks osrt (a stack per call needs the call's own return) counts every call.
 */
int osrt_blocked(const struct record_opts *o, const char **why)
{
	const struct osrt_opts *oo = osrt_opts(o);
	int named = 0, attach;

	for_each_family(it)
		if (it.f == &family_osrt)
			named = !!(o->families_named & (1ull << it.i)); /* -t osrt, -t +osrt */
	if (oo->mode != OSRT_MODE_AUTO) {
		*why = "--osrt-mode";
		return oo->mode == OSRT_MODE_BLOCKED;
	}
	/* -p to a running job (top -p's live view aside): what it costs the job comes first. */
	attach = !o->cmd && o->npids && !o->system_wide && !o->now_every_ns;
	if (!oo->always_on && !o->flight.window_ns && !attach) {
		*why = "a launched or system-wide recording counts every call";
		return 0;
	}
	if (named) {
		*why = "-t names osrt";
		return 0;
	}
	if (record_opts__stack_ns(o, &family_osrt) != RECORD_STACKS_OFF) {
		*why = "--stacks osrt";
		return 0;
	}
	*why = oo->always_on ? "monitor's default"
	       : o->flight.window_ns
		       ? "--flight-recorder's default"
		       : "-p's default: -t osrt or --osrt-mode exact counts every call";
	return 1;
}

static int parse_threshold(void *opts, const char *arg, const char *cmd)
{
	if (parse_threshold_ns(arg, &((struct osrt_opts *)opts)->threshold_ns))
		return msg__fail("bad --osrt-threshold '%s': use e.g. 0, 500ns, 1us "
				 "or 2ms",
				 arg);
	return 0;
}

void osrt_opts_describe(const void *opts, char *buf, size_t len)
{
	const struct osrt_opts *oo = opts;

	snprintf(buf, len, " osrt_threshold_ns=%llu%s", (unsigned long long)oo->threshold_ns,
		 oo->mode == OSRT_MODE_EXACT	 ? " osrt_mode=exact"
		 : oo->mode == OSRT_MODE_BLOCKED ? " osrt_mode=blocked"
						 : "");
}

const struct family_option osrt_options[] = {
	{ "osrt-threshold", "DUR",
	  "syscalls shorter than DUR are counted in the kernel, not recorded one by one: the "
	  "histograms' first bucket in monitor (default: record 1us, monitor and top 100us; 0 "
	  "records all)",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_threshold },
	{ "osrt-mode", "MODE",
	  "exact: every system call of the traced threads, timed from entry to return (a program "
	  "on every system call of the machine); blocked: only the calls that sleep, timed "
	  "asleep, from the context switches (the machine's system calls pay nothing). Default: "
	  "blocked for monitor and --flight-recorder with the default families, else exact",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, parse_mode },
	{ 0 },
};

const struct osrt_opts *osrt_opts(const struct record_opts *o)
{
	return record_opts__family(o, &family_osrt);
}
