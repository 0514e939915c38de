// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gil family, record side: finds the python processes among the targets, tells BPF where
 * each one's GIL is (gil_procs), attaches the probes (bpf/gil.bpf.c) and copies the
 * in-kernel totals into the trace.
 *
 * Which process maps which file is the uprobe manager's discovery (uprobe_mgr.h): gil is one
 * of its listeners. Of every ELF file examined it keeps glibc's (the file defining
 * pthread_cond_timedwait) and the interpreters' (defining _PyRuntime), and a look at a
 * process is a scan of its maps by the manager, which names the files it maps and where.
 * What a process's memory says about its GIL is gil_python.c's.
 *
 * Probes go on files for the traced processes that map them (uprobe_mgr__attach_links with pid
 * 0: the manager places a link in each, none in other processes; under -a one on the file):
 * glibc's condition wait, and in full mode take_gil/drop_gil of each interpreter file. So a
 * process is measured from its first instruction once BPF knows its GIL address, and forked
 * children inherit that address in BPF at fork (and their links with it: launch mode holds
 * them until they are in). __lll_lock_wait (the mutex slow path), single-stepped by the
 * kernel, is attached per python process only, so that no other traced process pays for it.
 *
 * Processes are looked at when recording starts, at exec, at fork, and on the first threads
 * they create (a GIL can only be contended once there are two threads); one that is not
 * python (yet: libpython is mapped by ld.so after exec) is looked at again on each of those
 * and on every poll during NEW_WINDOW_NS after it was first seen.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "array.h"
#include "kernel_features.h"
#include "msg.h"
#include "family_attach.h"
#include "gil_state.h"
#include "mono_clock.h"
#include "msg.h"
#include "hmap.h"
#include "msg.h"
#include "family_record.h"
#include "family_stats.h"

void gil_proc_unconfigure(struct gil_state *st, struct gil_proc *p)
{
	__u32 key = p->pid;

	if (p->configured)
		bpf_map_delete_elem(bpf_map__fd(st->skel->maps.gil_procs), &key);
	p->configured = 0;
	gil_proc_unlink_mutex(p);
}

struct gil_proc *gil_proc_get(struct gil_state *st, pid_t pid, int create)
{
	struct gil_proc **slot = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, create);

	if (!slot)
		return NULL;
	if (!*slot && create) {
		*slot = calloc(1, sizeof(**slot));
		if (*slot) {
			(*slot)->pid = pid;
			(*slot)->status = -1;
			(*slot)->first_seen_ns = mono_now_ns();
		}
	}
	return *slot;
}

/* Forget PID (exec: a new image; exit): its per-process probes go, its totals stay in BPF. */
static void proc_reset(struct gil_state *st, struct gil_proc *p)
{
	gil_proc_unconfigure(st, p);
	p->status = -1;
	p->written = 0;
	p->first_seen_ns = mono_now_ns();
	p->last_check_ns = 0;
}

static void proc_free(struct gil_proc *p)
{
	if (!p)
		return;
	gil_proc_unlink_mutex(p);
	free(p->libc_path);
	free(p);
}

/* PID exited: free what user space kept about it (the slot stays, for a recycled pid). */
static void proc_forget(struct gil_state *st, pid_t pid)
{
	struct gil_proc **slot = hmap__get(st->procs, (struct hkey){ (__u64)pid, 0 }, 0);

	if (!slot || !*slot)
		return;
	proc_free(*slot);
	*slot = NULL;
}

/*
 * Worth another look? Unfinished ones always; non-python ones while they are new. EVENT_TS is
 * the time of a thread creation or a new mapping in the process (0 on a poll): one that
 * happened after the last look may have changed the answer; within one ring-buffer drain
 * only the first such record costs a look.
 */
static int proc_needs_check(const struct gil_proc *p, __u64 now, __u64 event_ts)
{
	if (event_ts ? event_ts <= p->last_check_ns : now - p->last_check_ns < RECHECK_GAP_NS)
		return 0;
	switch (p->status) {
	case -1:
	case GIL_PY_PENDING:
	case GIL_PY_NO_GIL: /* the GIL may be switched on at run time */
		return 1;
	case GIL_PY_NOT_PYTHON:
		return now - p->first_seen_ns < NEW_WINDOW_NS;
	case GIL_PY_READY:
		/* Unverified or without holder ids: new threads may complete the picture. */
		return !(p->w_flags & BS_GIL_PROC_VERIFIED) || !(p->w_flags & BS_GIL_PROC_HOLDER) ||
		       (event_ts && !(p->w_flags & BS_GIL_PROC_MUTEX));
	default:
		return 0;
	}
}

/* Write the totals of thread KEY (pid << 32 | tid) if they changed since last written. */
static void agg_write(struct gil_state *st, struct record_ctx *ctx, int fd, __u64 key)
{
	struct bs_gil_agg r;
	__u64 *last;

	if (bpf_map_lookup_elem(fd, &key, &r.v))
		return;
	last = hmap__get(st->agg_w, (struct hkey){ key, 0 }, 1);
	if (!last || *last == r.v.wait_count + r.v.hold_count)
		return;
	*last = r.v.wait_count + r.v.hold_count;
	record_ctx__hdr(&r.h, BS_REC_GIL_AGG, sizeof(r), key >> 32, (__u32)key, 0);
	r.threshold_ns = GIL_THRESHOLD_NS;
	record_ctx__write(ctx, &r);
}

static void flush_agg(struct gil_state *st, struct record_ctx *ctx)
{
	int fd = bpf_map__fd(st->skel->maps.gil_agg);
	__u64 key, next, *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		agg_write(st, ctx, fd, key);
	}
}

/* A thread exited: its totals are final; write them and free the BPF entry. */
static void thread_done(struct gil_state *st, struct record_ctx *ctx, __u32 pid, __u32 tid)
{
	int fd = bpf_map__fd(st->skel->maps.gil_agg);
	__u64 key = (__u64)pid << 32 | tid;

	agg_write(st, ctx, fd, key);
	bpf_map_delete_elem(fd, &key);
}

/*
 * Write the blame totals that changed. With DONE_PID, only that process's, which has exited:
 * they are final, so their BPF entries are freed too (the map would fill on long -a runs).
 */
static void flush_blame(struct gil_state *st, struct record_ctx *ctx, __u32 done_pid)
{
	int fd = bpf_map__fd(st->skel->maps.gil_blame);
	struct bs_gil_blame_key key, next, *prev = NULL, *dead = NULL;
	struct bs_gil_blame_val v;
	struct bs_gil_blame r;
	size_t ndead = 0, cap = 0;
	__u64 *last;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (done_pid && key.pid != done_pid)
			continue;
		/* out of memory: the key stays, and is read again at the next flush */
		if (done_pid && !array__grow((void **)&dead, ndead, &cap, sizeof(*dead)))
			dead[ndead++] = key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		last = hmap__get(st->blame_w,
				 (struct hkey){ (__u64)key.pid << 32 | key.waiter, key.holder }, 1);
		if (!last || *last == v.count)
			continue;
		*last = v.count;
		memset(&r, 0, sizeof(r));
		record_ctx__hdr(&r.h, BS_REC_GIL_BLAME, sizeof(r), key.pid, key.waiter, 0);
		r.holder_tid = key.holder;
		r.count = v.count;
		r.total_ns = v.total_ns;
		record_ctx__write(ctx, &r);
	}
	/* Deleted after the walk: deleting under get_next_key would restart it. */
	for (size_t i = 0; i < ndead; i++)
		bpf_map_delete_elem(fd, &dead[i]);
	free(dead);
}

/* A process that ran before recording started has mapped what it maps: one look. */
static void proc_check_old(struct gil_state *st, struct record_ctx *ctx, pid_t pid)
{
	struct gil_proc *p = gil_proc_get(st, pid, 1);

	if (p)
		p->first_seen_ns = 0;
	gil_proc_check(st, ctx, pid);
}

static void scan_all(struct gil_state *st, struct record_ctx *ctx)
{
	struct dirent *d;
	DIR *dir = opendir("/proc");

	if (!dir)
		return;
	while ((d = readdir(dir))) {
		pid_t pid = (pid_t)strtol(d->d_name, NULL, 10);

		if (pid > 0 && pid != ctx->self_pid)
			proc_check_old(st, ctx, pid);
	}
	closedir(dir);
}

/*
 * The host's glibc, probed before anything runs: an attach on the file for every process (-a)
 * walks every process that maps it (~0.3 s here), better spent now than when the first
 * python shows up; elsewhere the group is made now and each traced process's link as it
 * is seen.
 */
static void preattach_libc(struct gil_state *st, struct record_ctx *ctx)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/lib/aarch64-linux-gnu/libc.so.6",
		"/usr/lib/aarch64-linux-gnu/libc.so.6",
		"/lib64/libc.so.6",
		"/usr/lib64/libc.so.6",
		"/lib/libc.so.6",
		"/usr/lib/libc.so.6",
	};
	struct gil_file *f;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		f = uprobe_mgr__examine(st->uprobes, st->listener, paths[i]);
		if (f && f->cond && !f->cond_tried)
			gil_libc_attach(st, ctx, f, paths[i], paths[i]);
	}
}

static void gil_state_free(struct gil_state *st)
{
	struct gil_proc **p;
	struct gil_file *f;
	size_t it = 0;

	if (!st)
		return;
	while (st->procs && (p = hmap__next(st->procs, &it, NULL)))
		proc_free(*p);
	while ((f = st->files)) {
		st->files = f->next;
		gil_file_free(f);
	}
	hmap__free(st->procs);
	hmap__free(st->agg_w);
	hmap__free(st->blame_w);
	perf_timers__close(&st->sampler);
	gil_bpf__destroy(st->skel);
	free(st);
}

/*
 * The manager's listener: its first scan is done, with every family's files examined. Now
 * the probes that are better attached before anything runs, and the first look at the
 * targets.
 */
static void on_started(void *arg)
{
	struct gil_state *st = arg;
	struct record_ctx *ctx = st->ctx;

	st->starting = 1;
	preattach_libc(st, ctx);
	if (ctx->opts->system_wide)
		scan_all(st, ctx);
	if (ctx->launch_pid)
		gil_proc_check(st, ctx, ctx->launch_pid);
	for (__u32 i = 0; i < ctx->opts->npids; i++)
		proc_check_old(st, ctx, ctx->opts->pids[i]);
	st->starting = 0;
}

static int gil_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	struct gil_state *st = calloc(1, sizeof(*st));
	struct uprobe_listener lis = {
		.file = gil_on_file, .mapped = gil_on_mapped, .started = on_started, .arg = st
	};
	int err;

	if (!st)
		return -ENOMEM;
	st->ctx = ctx;
	st->uprobes = a->uprobes;
	st->full = ((const struct gil_opts *)record_opts__family(ctx->opts, &family_gil))->full;
	st->procs = hmap__new(sizeof(struct gil_proc *));
	st->agg_w = hmap__new(sizeof(__u64));
	st->blame_w = hmap__new(sizeof(__u64));
	st->skel = gil_bpf__open();
	if (!st->skel || !st->procs || !st->agg_w || !st->blame_w) {
		err = st->skel ? -ENOMEM : -errno;
		goto fail;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx, &family_gil);
	st->skel->rodata->threshold_ns = GIL_THRESHOLD_NS;
	st->skel->rodata->gil_stack_ns = record_opts__stack_ns(ctx->opts, &family_gil);
	/* The holders' code by time (docs/GIL.md): without the sampler, where rounds begin. */
	if (st->skel->rodata->gil_stack_ns != ~0ull) {
		if (kfeature__has(KF_PERF_SAMPLING))
			st->skel->rodata->gil_sample_ns = GIL_SAMPLE_NS;
		else
			pr_warn("gil: no cpu-clock sampling here: the holders' code is read where "
				"each round of a wait begins, not weighed by time (docs/GIL.md)\n");
	}
	err = 0;
	if (uprobe_multi__supported()) {
		struct bpf_program *progs[] = {
			st->skel->progs.gil_cond_enter, st->skel->progs.gil_take_enter,
			st->skel->progs.gil_drop_enter, st->skel->progs.gil_mutex_enter,
			st->skel->progs.gil_exit,
		};

		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && !err; i++)
			err = uprobe_multi__prepare(progs[i]);
		if (err)
			goto fail;
	}
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = gil_bpf__load(st->skel);
	if (!err)
		err = gil_bpf__attach(st->skel); /* the lifecycle tracepoints; uprobes come later */
	if (err)
		goto fail;
	/* Said, not fatal: the waits are all there, only their holders' lines are less fair. */
	if (st->skel->rodata->gil_sample_ns &&
	    perf_timers__open(&st->sampler, st->skel->progs.gil_sample, 0,
			      st->skel->rodata->gil_sample_ns, "gil"))
		pr_warn("gil: no holder sampler: the holders' code is read where each round of a "
			"wait begins, not weighed by time (docs/GIL.md)\n");
	/* Last: once added, the manager keeps ST (a failed add keeps nothing). */
	st->listener = a->uprobes ? uprobe_mgr__add_listener(a->uprobes, &lis) : -EINVAL;
	if (st->listener < 0) {
		err = st->listener;
		goto fail;
	}
	*state = st;
	return 0;
fail:
	gil_state_free(st);
	return err;
}

/* A process's life: a python to look at (exec, fork, new code), one gone (exit). */
static const __u16 gil_observes[] = { BS_REC_EXEC, BS_REC_FORK, BS_REC_MAP_EXEC, BS_REC_EXIT, 0 };

static void gil_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_fork *fk = (const void *)rec;
	const struct bs_exit *ex = (const void *)rec;
	struct gil_state *st = state;
	struct gil_proc *p;

	switch (rec->type) {
	case BS_REC_EXEC:
		p = gil_proc_get(st, rec->pid, 1);
		if (!p)
			return;
		proc_reset(st, p);
		gil_proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_FORK:
		if (fk->child_pid == fk->child_tid) {
			/* A forked python is the parent's interpreter: look now (mutex probe). */
			p = gil_proc_get(st, rec->pid, 0);
			if (p && p->configured)
				gil_proc_check(st, ctx, fk->child_pid);
			else
				gil_proc_get(st, fk->child_pid, 1);
			break;
		}
		p = gil_proc_get(st, rec->pid, 1);
		if (p && proc_needs_check(p, mono_now_ns(), rec->ts))
			gil_proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_MAP_EXEC:
		if (rec->size < sizeof(struct bs_map_exec) ||
		    (((const struct bs_map_exec *)rec)->flags & BS_MAP_EXEC_NO_CODE))
			break; /* a fork (its FORK record looks), an exclusion: no new code */
		/*
		 * New code (dlopen of libpython), reported by the uprobe manager's libmap. Its
		 * records come at once (launch mode: the process waits), so an interpreter is often
		 * first seen before it starts: like a new thread, a later dlopen (an extension
		 * module) is a chance to verify it.
		 */
		p = gil_proc_get(st, rec->pid, 1);
		if (p && rec->ts > p->last_check_ns &&
		    (p->status != GIL_PY_READY || proc_needs_check(p, mono_now_ns(), rec->ts)))
			gil_proc_check(st, ctx, rec->pid);
		break;
	case BS_REC_EXIT:
		thread_done(st, ctx, rec->pid, rec->tid);
		if (!ex->group_dead)
			break;
		/* BPF dropped its configuration already; the pid may come back as another. */
		proc_forget(st, rec->pid);
		flush_blame(st, ctx, rec->pid);
		break;
	default:
		break;
	}
}

static int gil_poll(struct record_ctx *ctx, void *state)
{
	struct gil_state *st = state;
	struct gil_proc **pp;
	__u64 now = mono_now_ns();
	pid_t *todo;
	size_t it = 0;
	int n = 0;

	/* proc_check may add to procs (moving its values): collect first. */
	todo = calloc(hmap__count(st->procs) + 1, sizeof(*todo));
	if (!todo)
		return -ENOMEM;
	while ((pp = hmap__next(st->procs, &it, NULL)))
		if (*pp && proc_needs_check(*pp, now, 0))
			todo[n++] = (*pp)->pid;
	for (int i = 0; i < n; i++)
		gil_proc_check(st, ctx, todo[i]);
	/* Mutex probes, a few per poll: each attach stalls the ring-buffer consumer. */
	it = n = 0;
	while ((pp = hmap__next(st->procs, &it, NULL)) && n < MUTEX_ATTACH_PER_POLL)
		if (*pp && (*pp)->mutex_wanted && (*pp)->configured)
			todo[n++] = (*pp)->pid;
	for (int i = 0; i < n; i++) {
		struct gil_proc *p = gil_proc_get(st, todo[i], 0);

		if (p && !gil_proc_link_mutex(st, ctx, p))
			gil_proc_check(st, ctx, todo[i]);
	}
	free(todo);
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	return 0;
}

/* -t named gil and nothing else (proc is always recorded). */
static int only_family_asked(const struct record_ctx *ctx)
{
	const struct record_opts *o = ctx->opts;

	if (!o->families_explicit)
		return 0;
	for_each_family(fit)
		if ((o->families & (1ull << fit.i)) && fit.f != &family_gil &&
		    !(fit.f->flags & FAMILY_ALWAYS))
			return 0;
	return 1;
}

static void gil_detach(struct record_ctx *ctx, void *state)
{
	struct gil_state *st = state;
	struct gil_proc **p;
	size_t it = 0;

	/* Probes off first, so the last totals are final. */
	perf_timers__close(&st->sampler);
	gil_bpf__detach(st->skel);
	while ((p = hmap__next(st->procs, &it, NULL)))
		if (*p)
			gil_proc_unlink_mutex(*p);
	for (struct gil_file *f = st->files; f; f = f->next)
		for (int i = 0; i < NLINKS; i++)
			uprobe_links__detach(&f->links[i]);
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	if (!st->measured && st->unmeasured && only_family_asked(ctx)) {
		pr_err("-t gil: no traced Python's GIL could be measured (%u interpreter%s; %s): "
		       "gil_sum is empty; `bpfsight stats -r gil_procs` says how each was looked "
		       "at\n",
		       st->unmeasured, st->unmeasured > 1 ? "s" : "", st->unmeasured_note);
		ctx->nothing_measured = 1;
	}
	gil_state_free(st);
}

/* How each python process is measured: gil_procs and GIL.md's notes need it in any window. */
static const __u16 gil_state_records[] = { BS_REC_GIL_PROC, 0 };

/* A dump's cut: the waits still going then (gil_open_iter), as bs_gil_wait_open records. */
static void gil_open_at(struct record_ctx *ctx, void *state, __u64 cut, family_in_flight_fn fn,
			void *arg)
{
	struct gil_state *st = state;

	/*
	 * The totals read just before the waits, the cut just after: a wait that ends between
	 * is in neither (the totals and the blame take a wait at its end, gil.bpf.c's
	 * blame_later), so gil_sum and gil_blocked_by agree.
	 */
	flush_agg(st, ctx);
	flush_blame(st, ctx, 0);
	st->skel->bss->gil_cut_ns = cut > mono_now_ns() ? cut : mono_now_ns();
	record_ctx__iter_records(st->skel->progs.gil_open_iter, sizeof(struct bs_gil_wait_open),
				 "write the GIL waits open at the dump's cut", fn, arg);
}

static const struct family_record gil_recording = {
	.nsys_trace = "python-gil",	      /* nsys -t */
	.needs = 1u << KF_TASK_STORAGE,	      /* gil_thr: each thread's GIL state */
	.stack_default_ns = GIL_THRESHOLD_NS, /* every wait with a record, and its rounds */
	.options = gil_options,
	.opts_size = sizeof(struct gil_opts),
	.attach = gil_attach,
	.poll = gil_poll,
	.detach = gil_detach,
	.open_at = gil_open_at,
	.observe = gil_observe,
	.observes = gil_observes,
};

static const struct family_decode gil_reading = {
	.state_records = gil_state_records,
	.cumulative = gil_cumulative,
	.decoders = gil_decoders,
};

static const struct family_stats gil_stats = {
	.ledger = &gil_ledger,
	.reports = gil_reports,
	.verdict = &gil_verdict,
	.page = &gil_page,
};

const struct family family_gil = {
	.name = "gil",
	.desc = "CPython GIL waits per thread and who held it (uprobes on glibc/libpython)",
	.flags = FAMILY_STACKS_DEFAULT | FAMILY_UPROBES,
	.export = &gil_export,
	.sql = &gil_sql,
	.top = &gil_top,
	.metrics = &gil_metrics,
	.record = &gil_recording,
	.decode = &gil_reading,
	.stats = &gil_stats,
};
