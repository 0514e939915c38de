// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfsight top: a live view of what the traced processes and threads wait on, refreshed like
 * top or py-spy top. The recording is monitor's (recorder.c with no file): its records go to
 * top's counters (user/top/top_state.c, the recorder's sink), which the screen thread
 * (user/top/top_ui.c) cuts into a frame every interval.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commands.h"
#include "family.h"
#include "ledger.h"
#include "privileges.h"
#include "msg.h"
#include "record_args.h"
#include "uprobe_broker.h"
#include "record_options.h"
#include "recorder.h"
#include "top.h"
#include "top_family.h"
#include "top_screen.h"
#include "top_term.h"
#include "top_ui.h"
#include "verdict_ledger.h"

#define FAIL(...) msg__fail(__VA_ARGS__)

/* The columns there are: CPU%, then every family's (its own when recorded). */
static void print_columns(FILE *f)
{
	fprintf(f, "\nColumns (--sort KEY; a family's show once it has values):\n");
	for (const struct top_column *const *c =
		     (const struct top_column *const[]){ &top_cpu_column, &top_rank_column,
							 &top_role_column, NULL };
	     *c; c++)
		fprintf(f, "  %-15s %-9s %s\n", (*c)->head, (*c)->key, (*c)->desc);
	for_each_family(it)
		for (const struct top_column *c = it.f->top ? it.f->top->columns : NULL;
		     c && c->key; c++)
			fprintf(f, "  %-15s %-9s %s\n", c->head, c->key, c->desc);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bpfsight top [OPTIONS] [-a | -p PID...]   a live view of processes and "
		"threads\n"
		"       bpfsight top [-i DUR] [-n N] [-s KEY] FILE   the frames of a recording\n\n");
	record_args__print_options(f, "top");
	print_columns(f);
	fprintf(f, "\nThe function view (f, --functions; -s %s):\n", top_fview__keys());
	fprintf(f, "  %%Own %%Total OwnTime TotalTime, per line or function of the CPU samples\n");
	fprintf(f,
		"\n"
		"Keys: q quit, < > sort column, t threads, i idle rows, f functions (there: 1-4\n"
		"sort, l lines or functions, c since the start, r reset), w where the time went\n"
		"(--ledger), h help. Needs root, or CAP_BPF + CAP_PERFMON. Without a terminal on\n"
		"stdout it writes batch frames.\n");
}

/* The ledger view's machinery: the verdict's ledger over each interval (top.h). */
static void *ledger_new(void)
{
	return ledger__new(NULL);
}

static void ledger_add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	ledger__add(st, rec, m);
}

static int ledger_lines(void *st, const struct trace_model *m, __u64 from, __u64 to, FILE *f)
{
	ledger__set_window(st, from, to);
	return ledger__build(st, m) ? 0 : verdict_ledger__text(st, m, f);
}

static void ledger_clock(void *st, __u32 pid, __u32 tid, __u64 ts, __u64 cpu_ns, __u64 delay_ns,
			 int end)
{
	ledger__clock(st, pid, tid, ts, cpu_ns, delay_ns, end,
		      0); /* /proc's schedstat: no stamp read */
}

static void ledger_free(void *st)
{
	ledger__free(st);
}

static const struct top_ledger_ops ledger_view = {
	.new = ledger_new,
	.add = ledger_add,
	.lines = ledger_lines,
	.clock = ledger_clock,
	.free = ledger_free,
};

/* What only top checks: it launches nothing; without -p it shows every process. */
static int check_top(struct record_args *a, int argc, char **argv)
{
	if (optind < argc)
		return FAIL("top launches nothing: drop '%s' (run it, then -p its pid, or watch "
			    "everything without -p; a trace file is replayed alone)",
			    argv[optind]);
	if (record_args__check(a))
		return 1;
	if (!a->o.npids)
		a->o.system_wide = 1;
	return 0;
}

/* "pid 1234", "pids 1234, 5678", "every process": the title's. */
static void target_text(const struct record_opts *o, char *buf, size_t len)
{
	size_t used;

	if (!o->npids) {
		snprintf(buf, len, "every process");
		return;
	}
	used = snprintf(buf, len, "pid%s ", o->npids > 1 ? "s" : "");
	for (__u32 i = 0; i < o->npids && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%d", i ? "," : "", o->pids[i]);
}

/*
 * --sort KEY: a column of the recorded families (or cpu); with --functions, of the function
 * view. -1 after saying what is wrong.
 */
static int sort_column(struct top *t, const char *key, int functions)
{
	const struct top_col *cols;
	char keys[256];
	__u32 n;
	int c;

	cols = top__columns(t, &n);
	if (!key)
		return 0;
	if (functions) {
		c = top_fview__sort_key(key);
		if (c < 0)
			FAIL("bad --sort '%s' for --functions: use one of %s", key,
			     top_fview__keys());
		return c;
	}
	c = top_screen__sort_col(cols, n, key);
	if (c < 0) {
		top_screen__keys(cols, n, keys, sizeof(keys));
		FAIL("bad --sort '%s': use one of %s (the columns of the families recorded)", key,
		     keys);
	}
	return c;
}

/* What the function view says when no sample comes because none is taken: -t lacks them. */
static const char *funcs_hint(const struct record_opts *o, char *buf, size_t len)
{
	size_t used = 0;

	for_each_family(it)
		if (family__samples(it.f)) {
			if (o->families & (1ull << it.i))
				return NULL;
			used += snprintf(buf + used, len - used, "%s%s", used ? "," : "",
					 it.f->name);
		}
	if (!used)
		return NULL;
	snprintf(buf + used, len - used, " samples: add it to -t, or give --functions");
	return buf;
}

/*
 * bpfsight top FILE: a recording's frames. Every family's columns (those of families the file
 * lacks stay hidden); what picks processes or families, or sets up a recording, does not apply.
 */
static int replay(struct record_args *a, const char *path)
{
	struct record_opts *o = &a->o;
	struct top_ui_opts uo;
	const char *base;
	struct top *t;
	int sort, ret;

	if (o->npids || o->system_wide || a->trace || o->duration_ns)
		return FAIL("%s is replayed whole: -p, -a, -t and -d are for a live top", path);
	for_each_family(it)
		if (it.f->top)
			o->families |= 1ull << it.i;
	t = top__new(o);
	if (!t)
		return FAIL("out of memory");
	sort = sort_column(t, a->sort, a->functions);
	if (sort < 0) {
		top__free(t);
		return 1;
	}
	top__set_ledger(t, &ledger_view);
	base = strrchr(path, '/');
	uo = (struct top_ui_opts){ .t = t,
				   .batch = 1,
				   .interval_ns = a->interval_ns,
				   .iterations = a->iterations,
				   .sort = a->functions ? 0 : sort,
				   .threads = 1,
				   .target = base ? base + 1 : path,
				   .functions = a->functions,
				   .fsort = a->functions ? sort : 0,
				   .funcs_hint = "the recording took none",
				   .ledger = a->ledger };
	ret = top_replay__run(t, path, &uo, top_ui__batch_width());
	top__free(t);
	return ret;
}

int cmd_top(int argc, char **argv)
{
	struct record_args a = {};
	struct record_opts *o = &a.o;
	struct top_ui_opts uo = {};
	struct top_ui *ui = NULL;
	struct top *t = NULL;
	char target[256], hint[128];
	sigset_t winch;
	int ret = 1, e, sort;

	e = record_args__start(&a, "top", "bpfsight top", argc, argv, usage);
	if (e >= 0) {
		ret = e;
		goto out;
	}
	if (optind == argc - 1 && access(argv[optind], F_OK) == 0) {
		ret = replay(&a, argv[optind]);
		goto out;
	}
	if (check_top(&a, argc, argv))
		goto out;
	if (!privileges__can_trace()) {
		FAIL("top traces with BPF: it needs root (or CAP_BPF and CAP_PERFMON): run it "
		     "with sudo");
		goto out;
	}
	if (record_args__check_kernel("top", o))
		goto out;
	/* -p: its threads read each refresh, for NOW (what each is in, where in the job's code) */
	o->now_every_ns = o->npids ? a.interval_ns : 0;
	t = top__new(o);
	if (!t) {
		FAIL("out of memory");
		goto out;
	}
	sort = sort_column(t, a.sort, a.functions);
	if (sort < 0)
		goto out;
	top__set_ledger(t, &ledger_view);
	target_text(o, target, sizeof(target));
	uo = (struct top_ui_opts){ .t = t,
				   .batch = a.batch || !top_term__usable(),
				   .interval_ns = a.interval_ns,
				   .iterations = a.iterations,
				   .sort = a.functions ? 0 : sort,
				   /* -p: its threads too; every process: processes, as top */
				   .threads = o->npids > 0,
				   .target = target,
				   .functions = a.functions,
				   .fsort = a.functions ? sort : 0,
				   .funcs_hint = funcs_hint(o, hint, sizeof(hint)),
				   .ledger = a.ledger };
	/* The screen thread reads resizes from a signalfd: every thread blocks SIGWINCH. */
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &winch, NULL);
	if (uo.batch)
		signal(SIGPIPE, SIG_IGN); /* a reader that went away stops top, cleanly */
	o->sink = top__record;
	o->sink_live = top__live;
	o->sink_arg = t;
	o->thread_names = 1; /* a thread's row shows its threading name, as py-spy top */
	o->sink_name = uo.batch ? "stdout" : "the screen";
	record_args__libbpf_print(o->verbose);
	privileges__drop(
		0,
		uprobe_broker__start); /* before the screen's thread (privileges.h); recorder__run says */
	ui = top_ui__start(&uo);
	if (!ui)
		goto out;
	ret = recorder__run(o);
out:
	top_ui__stop(ui); /* the terminal given back, what went to stderr meanwhile shown */
	top__free(t);
	record_args__free(&a);
	return ret;
}
