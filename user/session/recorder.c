// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One recording, start to finish: create the shared maps and the services, attach the
 * families, release a launched CMD, drain the ring buffer into the writer until the targets
 * exit, the duration ends or a signal comes, then detach, drain what is left and close the
 * file (recording.h lists the driver's files).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "capture_files.h"
#include "capture_gate.h"
#include "family.h"
#include "family_record.h"
#include "family_attach.h"
#include "flight_recorder.h"
#include "kernel_features.h"
#include "launch.h"
#include "link_reaper.h"
#include "privileges.h"
#include "proc_meta.h"
#include "record_clock.h"
#include "record_losses.h"
#include "recording.h"
#include "ring_pump.h"
#include "shim_link.h"
#include "stack_svc.h"
#include "start_at.h"
#include "string_pool.h"
#include "target_tree.h"
#include "exclude.h"
#include "trace_writer.h"
#include "uprobe_broker.h"
#include "uprobe_mgr.h"
#include "msg.h"
#include "output_name.h"

#define POLL_MS	       20	    /* ring buffer drain period when no wakeup comes */
#define HOUSEKEEP_NS   100000000ull /* losses, targets, chunk age */
#define FAMILY_POLL_NS 1000000000ull
#define STATUS_NS      1000000000ull
/*
 * What the ring pump may hold in memory, in ring sizes: a recording thread busy for seconds
 * (a new process's CUDA libraries examined) loses nothing at the rates of real jobs.
 */
#define PUMP_RINGS 4
/*
 * A stop ends the recorder within 2 s of its beginning (docs/USAGE.md; tests/e2e/test_stop.py)
 * whatever the event rate: each step that can take long has a deadline counted from the stop's
 * beginning, not a time of its own after the steps before (they were 1 s of reading after the
 * end's snapshot, 0.5 s for the verdict, 0.5 s for the probes' removal: 2.3-3.3 s on a loaded
 * machine). Until STOP_READ_NS the ring's records are read, then counted (stop_unread); the
 * verdict is read until STOP_VERDICT_NS, at most STOP_VERDICT_MAX_NS (a small file's takes
 * milliseconds); the exit waits for the probes' removal (link_reaper.h) until STOP_LET_GO_NS,
 * at most STOP_LET_GO_MAX_MS, past which it leaves it to the reaper. What remains is the
 * writes' and the exit's.
 */
#define STOP_READ_NS	    1000000000ull
#define STOP_VERDICT_NS	    1300000000ull
#define STOP_VERDICT_MAX_NS 500000000ull
#define STOP_LET_GO_NS	    1500000000ull
#define STOP_LET_GO_MAX_MS  500
#define STOP_NICE	    -20 /* the recorder's priority while it stops */

static volatile sig_atomic_t stop_signal, flush_signal;
/* When the first stop signal came (CLOCK_MONOTONIC: a stop's deadlines count from it). */
static volatile __u64 stop_signal_ns;
static const char *volatile stop_why; /* recorder__stop's reason, said in place of the signal */
static pid_t main_tid;		      /* the thread that records (and stops) */
static pid_t pump_tid; /* the thread that empties the ring (ring_pump.h), once it runs */

/* The stop gets the CPU first (finish() says why); errno is the interrupted code's. */
static void on_signal(int sig)
{
	int e = errno;

	if (!stop_signal)
		stop_signal_ns = mono_now_ns(); /* clock_gettime: async-signal-safe */
	stop_signal = sig;
	setpriority(PRIO_PROCESS, main_tid, STOP_NICE);
	if (pump_tid)
		setpriority(PRIO_PROCESS, pump_tid, STOP_NICE);
	errno = e;
}

/*
 * The thread that takes the stop signals. A signal runs its handler only once its thread
 * runs, and the recording thread, busy behind a flood of records on cores full of traced
 * threads, may wait long for its turn; this one sleeps, at the stop's priority, so it runs
 * at once and hands that priority to the recording thread.
 */
static void *stop_watch(void *arg)
{
	sigset_t *stops = arg;

	setpriority(PRIO_PROCESS, 0, STOP_NICE);
	pthread_sigmask(SIG_UNBLOCK, stops, NULL);
	for (;;)
		pause();
	return NULL;
}

/* From here on the stop signals go to stop_watch (CMD, forked before, keeps its mask). */
static void watch_stops(void)
{
	static sigset_t stops;
	static int watching; /* monitor --follow records again: one watcher serves every run */
	pthread_t t;

	if (watching)
		return;
	watching = 1;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	if (pthread_create(&t, NULL, stop_watch, &stops)) {
		pthread_sigmask(SIG_UNBLOCK, &stops, NULL); /* this thread takes them, later */
		return;
	}
	pthread_detach(t);
}

int recorder__stop_signalled(void)
{
	return stop_signal != 0;
}

void recorder__stop(const char *why)
{
	stop_why = why;
	kill(getpid(), SIGINT); /* taken by stop_watch, as Ctrl-C is */
}

/* How the recording was stopped, for its last line: "5 frames shown", "stopped by SIGTERM". */
static const char *stopped_by(char *buf, size_t len)
{
	const char *name;

	if (stop_why)
		return stop_why;
	if (!stop_signal)
		return NULL;
	name = sigabbrev_np(stop_signal);
	snprintf(buf, len, "stopped by %sSIG%s%s", stop_signal == SIGINT ? "Ctrl-C (" : "",
		 name ? name : "?", stop_signal == SIGINT ? ")" : "");
	return buf;
}

/*
 * SIGUSR1/SIGUSR2: make what was recorded so far readable on disk, and go on recording; with
 * --flight-recorder, dump the window instead.
 */
static void on_flush_signal(int sig)
{
	flush_signal = sig;
}

static int add_target(struct record_ctx *ctx, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(ctx->targets_fd, &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

/* 1 when REC says BPF stopped its process at new code (launch mode): it waits for us. */
static int stopped_at_new_code(const struct bs_hdr *h, size_t size)
{
	return h->type == BS_REC_MAP_EXEC && size >= sizeof(struct bs_map_exec) &&
	       (((const struct bs_map_exec *)h)->flags & BS_MAP_EXEC_STOPPED);
}

/* 1 when TYPES (0-terminated; NULL: every type) holds TYPE. */
static int takes(const __u16 *types, __u16 type)
{
	if (!types)
		return 1;
	for (; *types; types++)
		if (*types == type)
			return 1;
	return 0;
}

/* Who takes each record type: the families attached and the uprobe manager (recording.h). */
static void make_dispatch(struct recording *r)
{
	for (int t = 0; t < BS_REC_TYPE_MAX; t++) {
		int nc = 0, no = 0;

		for_each_family_while(fit, fit.i < RECORD_MAX_FAMILIES) {
			const struct family *f = fit.f;

			if (!r->fam[fit.i].attached)
				continue;
			if (f->record->consume && takes(f->record->consumes, t))
				r->consumers[t][nc++] = (__s8)fit.i;
			if (f->record->observe && takes(f->record->observes, t))
				r->observers[t][no++] = (__s8)fit.i;
		}
		r->consumers[t][nc] = r->observers[t][no] = -1;
		r->uprobes_observe[t] = takes(uprobe_mgr__observes, t);
		r->ring_only[t] = family__ring_only(t);
	}
}

/*
 * The record path: every ring record goes to the consume hooks that take its type, the stack
 * service, the observe hooks that take its type, the uprobe manager and the capture gate, then
 * where records go.
 */
static void handle_record(struct recording *r, void *data, size_t size)
{
	struct record_ctx *ctx = &r->ctx;
	const struct bs_hdr *h = data;
	const __s8 *fi;
	int consumed = 0;

	/* BPF wrote it, but the contract is checked on both sides. */
	if (size < sizeof(*h) || h->size != size || size % 8 || h->type >= BS_REC_TYPE_MAX)
		return;
	for (fi = r->consumers[h->type]; *fi >= 0 && !consumed; fi++)
		if (r->fam[*fi].attached) /* a family detached at the stop takes no more */
			consumed = families[*fi]->record->consume(ctx, r->fam[*fi].state, h);
	if (consumed)
		return;
	if (h->type == BS_REC_STACK_RAW) {
		if (r->stacks)
			stack_svc__consume(ctx, r->stacks, h);
		return;
	}
	if (r->ring_only[h->type])
		return; /* and the family that unpacks it is gone: never on disk */
	if (r->stacks)
		stack_svc__observe(ctx, r->stacks, h);
	for (fi = r->observers[h->type]; *fi >= 0; fi++)
		if (r->fam[*fi].attached)
			families[*fi]->record->observe(ctx, r->fam[*fi].state, h);
	if (!r->uprobes_observe[h->type])
		;
	else if (r->uprobes && !r->uprobes_closed)
		uprobe_mgr__observe(r->uprobes, h);
	else if (stopped_at_new_code(h, size))
		kill(h->pid, SIGCONT); /* probes already gone: never leave a process stopped */
	if (ctx->gate && !capture_gate__keep(ctx->gate, h))
		return;
	record_ctx__write(ctx, h);
	if (h->type == BS_REC_FORK || h->type == BS_REC_EXEC)
		proc_meta__observe(ctx, h);
}

/*
 * Past the stop's read time a record is only counted; a process that its exec record says
 * BPF stopped is let go all the same (a traced process is never harmed).
 */
static void count_unread(struct record_ctx *ctx, const struct bs_hdr *h, size_t size)
{
	/* The family whose record it is: the one of its record-type block (records.h). */
	ctx->lost_user[loss__key(loss__block_family(h->type), BS_LOSS_STOP_UNREAD)]++;
	if (stopped_at_new_code(h, size))
		kill(h->pid, SIGCONT);
}

/* Every ring record; ends the read (record_ctx__read) once its batch is taken. */
static int on_record(void *arg, void *data, size_t size)
{
	struct recording *r = arg;
	struct record_ctx *ctx = &r->ctx;

	if (stop_signal && !ctx->stop_by)
		ctx->rb_left = 1; /* this one is the read's last: the loop sees the signal */
	/* The clock every 256 records: cheap beside a record, often enough beside a second. */
	if (ctx->stop_by && !ctx->rb_count_only && !(++ctx->rb_seen & 255) &&
	    mono_now_ns() > ctx->stop_by)
		ctx->rb_count_only = 1;
	if (ctx->rb_count_only && size >= sizeof(struct bs_hdr))
		count_unread(ctx, data, size);
	else
		handle_record(r, data, size);
	return --ctx->rb_left > 0 ? 0 : -EAGAIN;
}

/*
 * Let CMD run, unless a stop signal came during start-up: then it never runs (the gate
 * closes and the held child exits 127). Signals are blocked from the check to the release,
 * so a stop either comes before (CMD never runs) or after (CMD is stopped like any target).
 */
static void release_cmd(struct launch *l)
{
	sigset_t stops, old;

	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	sigprocmask(SIG_BLOCK, &stops, &old);
	if (stop_signal) {
		launch__abort(l);
		pr_err("stopped (%s) during start-up: CMD was not run "
		       "(exit status 127)\n",
		       strsignal(stop_signal));
	} else
		launch__go(l);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* 1 while some -p target (or the launched CMD) is still alive. */
/* Launch mode ends with CMD, whatever -p processes are traced beside it. */
static int targets_alive(const struct record_opts *o, struct launch *l)
{
	if (o->cmd)
		return !launch__reap(l, 0);
	for (__u32 i = 0; i < o->npids; i++)
		if (proc_meta__alive_since(o->pids[i], o->pid_start[i]))
			return 1;
	return 0;
}

/*
 * Losses into LOSS records; a loss of the recording's own records (exec, dlopen) has the
 * uprobe manager look at every process again, so none is left unprobed.
 */
static void account_losses(struct recording *r)
{
	if (record_losses__account(&r->ctx, r->seen_lost, &r->lost_total))
		uprobe_mgr__rescan_all(r->uprobes);
}

static void poll_families(struct recording *r)
{
	for_each_family_slot(it, r->fam)
		if (it.slot->attached && it.f->record->poll)
			it.f->record->poll(&r->ctx, it.slot->state);
}

void recording__bring_up_to_date(struct recording *r)
{
	account_losses(r);
	stack_svc__write_unwind_usage(&r->ctx, r->stacks);
	poll_families(r);
}

/*
 * Without uprobe_multi (< 6.6) every probe site holds two fds (its perf event and its link):
 * `-t cuda` on libcudart and libcuda passes the usual soft limit of 1024 ("Too many open
 * files", seen on Debian 12's 6.1). Raised to the hard limit after CMD is forked, so CMD
 * keeps its own.
 */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* Signals stop the recording cleanly from here on; none restarts a system call. */
static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal }, fsa = { .sa_handler = on_flush_signal };

	main_tid = gettid();

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&fsa.sa_mask);
	sigaction(SIGUSR1, &fsa, NULL);
	sigaction(SIGUSR2, &fsa, NULL);
}

/*
 * Everything up to the first record: CMD forked (held), the shared maps, the targets, the
 * stack service, every family attached, the uprobe manager's first scan.
 */
static int start(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	const struct record_opts *o = ctx->opts;
	int err;

	if (o->cmd) {
		err = launch__start(&r->launch, o->cmd, o->run_as, o->run_uid, o->run_gid);
		if (err) {
			pr_err("cannot start %s: %s\n", o->cmd[0], strerror(-err));
			return -1;
		}
		r->launched = 1;
	}
	/* After the fork (-o's %p is CMD's pid), before the privileges to create it go. */
	if (o->output_pattern) {
		if (output_name__expand(o->output_pattern, r->launch.pid, r->output_name,
					sizeof(r->output_name)))
			return -1;
		r->opts.output = r->output_name;
	}
	if (recording__open_output(r))
		return -1;
	raise_fd_limit();
	/* Reads that may never end give up on it, and on -d's end once live (must_stop). */
	ctx->stop_flag = &stop_signal;
	/* CMD forked with what it had; the rest runs with what recording needs (privileges.h). */
	/* Written later, maybe into another user's directory: dumps, --inject's shim. */
	err = o->records_again ? 0
			       : privileges__drop(o->flight.window_ns != 0 || o->inject,
						  uprobe_broker__start);
	if (err)
		pr_warn("cannot drop the capabilities recording does not need: %s\n",
			strerror(-err));
	err = recording__create_maps(r);
	if (err) {
		pr_err("cannot create BPF maps: %s\n", strerror(-err));
		return -1;
	}
	/*
	 * Read the ring from now on: probes attached first fire while later families attach
	 * and the uprobe manager examines every process's files (seconds on a node of CUDA
	 * jobs). Their records wait in memory until the recording goes live.
	 */
	r->pump = ring_pump__new(ctx->events_fd, PUMP_RINGS * o->ringbuf_bytes, on_record, r);
	if (!r->pump) {
		pr_err("cannot read the ring buffer: %s\n", strerror(errno));
		return -1;
	}
	if (o->capture && recording__capture_start(r))
		return -1;
	/* Targets first: families that look for code to probe scan them as they attach. */
	if (r->launched) {
		ctx->launch_pid = r->launch.pid;
		if (add_target(ctx, r->launch.pid))
			return -1;
	}
	for (__u32 i = 0; i < o->npids; i++)
		if (add_target(ctx, o->pids[i]))
			return -1;
	/* -a's left out: before the first look at the machine's processes. */
	err = exclude__fill(ctx);
	if (err) {
		pr_err("cannot read the processes --exclude-* leaves out: %s\n", strerror(-err));
		return -1;
	}
	if (recording__make_services(r))
		return -1;
	for_each_family_slot(it, r->fam) {
		struct family_attach a;

		if (!(o->families & (1ull << it.i)))
			continue;
		recording__attach_args(r, it.i, &a);
		err = it.f->record->attach(&a, &it.slot->state);
		if (err) {
			pr_err("cannot load the %s family: %s\n", it.f->name, strerror(-err));
			return -1;
		}
		it.slot->attached = 1;
	}
	/*
	 * Children of -p forked while the families attached, after the first look for them and
	 * before proc's fork hook was live, were traced by nothing: a job forking 300 processes
	 * as the recording began lost 6 of them on a loaded machine. Looked for again now that
	 * every fork from here on is seen.
	 */
	if (!o->no_subprocesses && r->opts.npids) {
		__u32 had = r->opts.npids;

		target_tree__take_children(&r->opts);
		for (__u32 i = had; i < r->opts.npids; i++)
			if (add_target(ctx, r->opts.pids[i]))
				return -1;
	}
	make_dispatch(r);
	/* And those forked meanwhile, before proc.bpf.c took over from its attach on. */
	err = exclude__fill(ctx);
	if (err) {
		pr_err("cannot read the processes --exclude-* leaves out: %s\n", strerror(-err));
		return -1;
	}
	if (r->uprobes)
		uprobe_mgr__start(r->uprobes);
	if (r->stacks)
		stack_svc__start(ctx, r->stacks);
	if (recording__snap_start(r) || recording__hang_start(r))
		return -1;
	return 0;
}

/* The ring buffer read, what is already there named, CMD released; then the line scripts wait for. */
static int go_live(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	const struct record_opts *o = ctx->opts;
	const char *check;
	int err;

	ctx->pump = r->pump;
	pump_tid = ring_pump__tid(r->pump);
	/* Every family attached: what recording never does from here on is denied. */
	err = o->records_again
		      ? 0
		      : privileges__confine(o->inject, record_opts__writes_targets(o), &check);
	if (err)
		pr_warn("cannot install the seccomp filter: %s\n", strerror(-err));
	else if (o->verbose && !o->records_again)
		pr_info("seccomp filter installed: %s\n", check);
	/*
	 * The recording starts now, every probe live: -d counts from here, and the file's start
	 * says so (start-up took the attach time before it; --start-at set its own instant).
	 */
	if (!o->start_at.set) {
		record_clocks__now(&r->rm.meta.start);
		if (r->writer && !r->flight &&
		    (err = trace_writer__rewrite_header(r->writer, &r->rm.meta))) {
			pr_err("cannot write the start clocks to %s: %s\n", recording__out_path(r),
			       strerror(-err));
			return -1;
		}
	}
	r->start = r->rm.meta.start.mono_ns;
	ctx->end_ns = o->duration_ns ? r->start + o->duration_ns : 0;
	ctx->live_ns = r->start;
	if (o->sink_live)
		o->sink_live(o->sink_arg);
	if (o->system_wide)
		proc_meta__snapshot_all(ctx);
	for (__u32 i = 0; i < o->npids; i++)
		if (proc_meta__snapshot(ctx, o->pids[i], 1) == -ESRCH && o->pid_comm[i][0])
			proc_meta__gone(ctx, o->pids[i], o->pid_parent[i], o->pid_comm[i]);
	if (r->launched) {
		proc_meta__snapshot(ctx, r->launch.pid, 1);
		release_cmd(&r->launch);
	}
	/* -p: the intervals open now carried in, and what the job's threads were doing as the
	 * recording began (blocked since when); a flight recorder's too, for its dumps' cuts (a
	 * read blocked since before the recording is open there). Not -a: every idle thread of
	 * the machine would come in asleep for the whole recording. */
	if ((record_opts__edges(o) || o->flight.window_ns) && o->npids && !o->system_wide) {
		__u64 t0 = mono_now_ns();

		for_each_family_slot(it, r->fam)
			if (it.slot->attached && it.f->record->at_start)
				it.f->record->at_start(ctx, it.slot->state);
		if (o->verbose)
			pr_info("the intervals open at the start carried in in %.1f ms\n",
				(mono_now_ns() - t0) / 1e6);
	}
	recording__edge(r, BS_SNAP_AT_START);
	/* Scripts wait for this line: every probe is live from here on. */
	if (r->flight) {
		char first[4096];

		flight_opts__dump_path(o->output, 1, first, sizeof(first));
		pr_info("recording %s to %s%sflight recorder: the last %s, "
			"dumped to %s... on a trigger or SIGUSR1 (families: %s); Ctrl-C to stop\n",
			r->rm.target, o->sink_name ? o->sink_name : "memory",
			o->sink_name ? " and memory, " : ", ", o->flight.text, first,
			r->rm.families);
	} else {
		pr_info("recording %s to %s%s (families: %s); Ctrl-C to stop\n", r->rm.target,
			o->dry_run  ? "nothing (--dry-run)"
			: o->output ? recording__out_path(r)
				    : o->sink_name,
			r->files ? " (a file per range: -1.bst, -2.bst, ...)" : "", r->rm.families);
	}
	return 0;
}

/*
 * A SIGUSR1 or SIGUSR2 received: a flush (1: done), or with --flight-recorder a trigger (0).
 */
static int take_flush_signal(struct recording *r)
{
	int sig = flush_signal;

	flush_signal = 0;
	if (!r->flight) {
		recording__flush_now(r);
		return 1;
	}
	flight__trigger(r->flight, sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2", 1);
	return 0;
}

/*
 * Drain the ring buffer into the file until a stop signal, a failed write, the duration's
 * end or the targets' exit; on the way: new code probed, flushes and flight dumps on
 * request, losses and the families' in-kernel totals written, the status line.
 */
static void drain(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	const struct record_opts *o = ctx->opts;
	__u64 now, last_keep, last_poll, last_status,
		end = o->duration_ns ? r->start + o->duration_ns : 0;
	int err, wait_ms;

	last_keep = last_poll = last_status = mono_now_ns();
	for (;;) {
		/* -d: the read's wait ends at the duration's end, not up to POLL_MS past it. */
		now = mono_now_ns();
		wait_ms = end && end - now < POLL_MS * 1000000ull
				  ? (int)((end > now ? end - now : 0) / 1000000 + 1)
				  : POLL_MS;
		/* A batch at a time: the stop is seen whatever the event rate. */
		err = record_ctx__read(ctx, wait_ms, RECORD_CTX_BATCH);
		if (err < 0) {
			pr_info("ring buffer: %s\n", strerror(-err));
			break;
		}
		now = mono_now_ns();
		if (stop_signal || ctx->write_err)
			break;
		if (ctx->capture_done) {
			r->ended = ctx->capture_failed ? "no capture range can open"
						       : "the capture is complete";
			break;
		}
		if (r->uprobes)
			uprobe_mgr__poll(r->uprobes); /* files mapped since: bounded by POLL_MS */
		if (r->stacks)
			stack_svc__poll(ctx, r->stacks); /* pythons still starting */
		if (end && now >= end) {
			r->ended = "-d's time is over";
			break;
		}
		if (flush_signal && take_flush_signal(r))
			continue;
		if (r->flight && flight__due(r->flight, now)) {
			/* The window ends now: in-kernel totals and losses first, as a flush. */
			recording__bring_up_to_date(r);
			recording__dump_open(r);
			flight__dump(r->flight);
			continue;
		}
		if (now - last_keep < HOUSEKEEP_NS)
			continue;
		last_keep = now;
		account_losses(r);
		if (r->hang)
			recording__hang_look(r, now);
		recording__now(r, now);
		if (r->flight)
			flight__tick(r->flight, now);
		else if (r->writer && (err = trace_writer__tick(r->writer, now)) && !ctx->write_err)
			ctx->write_err =
				err; /* the chunk's records are dropped: counted at the end */
		if (r->files && (err = capture_files__tick(r->files, now)) && !ctx->write_err)
			ctx->write_err = err; /* said */
		if (!o->system_wide && !targets_alive(o, &r->launch)) {
			r->ended = "the targets exited";
			break;
		}
		if (now - last_poll >= FAMILY_POLL_NS) {
			last_poll = now;
			poll_families(r);
		}
		if (r->tty && r->writer && now - last_status >= STATUS_NS) {
			last_status = now;
			recording__print_status(r, now, 0);
		}
	}
	/*
	 * A trigger that came with the stop (both pending when the loop woke, or between its
	 * look and the break): written at the end, or counted, never lost.
	 */
	if (flush_signal && r->flight)
		take_flush_signal(r);
}

/*
 * When the stop began: its signal's arrival, or -d's end, if either came before now. The
 * recording thread notices them between reads, which a flood of records can make long (0.3
 * s under load 50): the promise counts from the stop, not from when it was noticed.
 */
static __u64 stop_began(const struct recording *r)
{
	const struct record_opts *o = r->ctx.opts;
	__u64 now = mono_now_ns(), at = now;

	if (stop_signal && stop_signal_ns && stop_signal_ns < at)
		at = stop_signal_ns;
	if (o->duration_ns && r->start + o->duration_ns < at)
		at = r->start + o->duration_ns;
	return at;
}

/*
 * The end of a recording that ran: producers flushed, probes detached (each family writes
 * its final state), the ring drained, the file closed and the run summed up.
 */
static enum record_outcome finish(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	struct trace_clocks end;
	char by[512], sigbuf[64];
	const char *how;
	__u64 nrec;
	int err;

	r->stop_ns = stop_began(r);
	/*
	 * The stop is short and must not wait for CPU time: traced threads that keep every
	 * core busy (dozens per core) would leave the recorder a sliver of each. Best effort.
	 */
	setpriority(PRIO_PROCESS, main_tid, STOP_NICE);
	if ((pump_tid = ring_pump__tid(r->pump)))
		setpriority(PRIO_PROCESS, pump_tid, STOP_NICE);
	/* What the job's threads are doing as it ends, the calls still in flight, every probe live. */
	recording__edge(r, BS_SNAP_AT_END);
	/* Producers that buffer (the cupti-shim) flush first, the probes still attached. */
	for_each_family_slot(it, r->fam)
		if (it.slot->attached && it.f->record->stop)
			it.f->record->stop(ctx, it.slot->state);
	/*
	 * No new records from here on, so the ring only empties: what is in it is read for
	 * STOP_READ_NS at most and the rest counted, so no event rate keeps the recording alive.
	 * This is the recording's end: what comes later are the families' final states.
	 */
	record_ctx__stop_producers(ctx, r->stop_ns + STOP_READ_NS);
	record_clocks__now(&end);
	ctx->ended_ns = end.mono_ns;
	/* Stacks in the ring are named while the processes' code is still known. */
	while (record_ctx__read(ctx, 0, RECORD_CTX_BATCH) > 0)
		;
	/*
	 * Stop the probes (each family writes its final state), then drain. The kernel's
	 * unregistering of uprobes can take seconds under a storm (bench/RESULTS.md): the links
	 * go to a detached process, which waits for it, so closing them here is instant. The
	 * probes write nothing past the stop bit meanwhile.
	 */
	link_reaper__hold_all();
	recording__close_services(r);
	for (int i = RECORD_MAX_FAMILIES - 1; i >= 0; i--)
		if (r->fam[i].attached) {
			families[i]->record->detach(ctx, r->fam[i].state);
			r->fam[i].attached = 0;
		}
	/* Its probes go, and what the ring still holds of its batches is unpacked. */
	shim_link__free(r->shim);
	r->shim = NULL;
	while (record_ctx__read(ctx, 0, RECORD_CTX_BATCH) > 0)
		;
	account_losses(r);
	/* What the end line says of the unwind tables, into the file (or the window) first. */
	stack_svc__write_unwind_usage(ctx, r->stacks);
	if (r->tty && r->writer)
		recording__print_status(r, end.mono_ns, 1);
	how = stopped_by(sigbuf, sizeof(sigbuf));
	if (r->flight) {
		/* A dump still waiting for its --trigger-after is written with what there is. */
		flight__finish(r->flight, ring_pump__held_peak(ctx->pump));
		recording__say_written(r, trace_writer__records(r->writer), how);
		if (ctx->write_err)
			return RECORD_WRITE_FAILED;
		return flight__failed(r->flight) ? RECORD_DUMP_FAILED : RECORD_WHOLE;
	}
	/*
	 * The last records reach the disk before the end is written: a disk that filled while
	 * they waited is then a write error like any other (dropped records counted), not a
	 * file without its end.
	 */
	if (r->files && (err = capture_files__finish(r->files)) && !ctx->write_err)
		ctx->write_err = err; /* said */
	if (!ctx->write_err && r->writer && (err = trace_writer__flush(r->writer)))
		ctx->write_err = err;
	if (ctx->write_err) {
		recording__close_after_write_error(r);
		return RECORD_WRITE_FAILED;
	}
	if (!r->writer) { /* monitor, top: the records went to the sink only */
		record_losses__summary(r->seen_lost, by, sizeof(by));
		pr_info("%s: %llu events lost%s\n",
			how	   ? how
			: r->ended ? r->ended
				   : "stopped",
			(unsigned long long)r->lost_total, by);
		return RECORD_WHOLE;
	}
	nrec = trace_writer__records(r->writer);
	err = trace_writer__close(r->writer, &end);
	r->writer = NULL;
	if (err) {
		pr_err("closing %s: %s\n", recording__out_path(r), strerror(-err));
		return RECORD_WRITE_FAILED;
	}
	recording__say_written(r, nrec, how);
	r->wrote = 1;
	snprintf(r->verdict_path, sizeof(r->verdict_path), "%s", recording__out_path(r));
	if (ctx->nothing_measured)
		return RECORD_NOTHING_MEASURED;
	return ctx->gate ? recording__say_captured(r) : RECORD_WHOLE;
}

int recorder__exit_status(enum record_outcome outcome, int cmd_status)
{
	if (outcome != RECORD_WHOLE)
		return 1;
	return cmd_status >= 0 ? cmd_status : 0;
}

/*
 * A launched CMD is the user's job: pass our stop on, then report its status. A capture that
 * failed (no range can open) is a failed recording: CMD runs on to its own end, untouched.
 */
static int reap_cmd(struct recording *r)
{
	const struct record_opts *o = r->ctx.opts;

	if (!r->launch.reaped && stop_signal)
		kill(r->launch.pid, stop_signal);
	else if (!r->launch.reaped && o->kill_signal && !r->ctx.capture_failed)
		kill(r->launch.pid, o->kill_signal);
	launch__reap(&r->launch, 1);
	r->launched = 0;
	return launch__exit_status(&r->launch);
}

/*
 * The deadline of a stop's step: AT after the stop began, and at most MAX from now (without a
 * stop's beginning, MAX from now: a start-up that failed, or a launched CMD waited for).
 */
static __u64 stop_deadline(const struct recording *r, __u64 at, __u64 max)
{
	__u64 now = mono_now_ns();

	if (r->stop_ns && r->stop_ns + at < now + max)
		return r->stop_ns + at;
	return now + max;
}

/* What is left after a recording, whatever stopped it. */
static void teardown(struct recording *r)
{
	struct record_ctx *ctx = &r->ctx;
	__u64 now, by;

	recording__close_services(r); /* families' detach must not scan (gil checks) */
	for (int i = RECORD_MAX_FAMILIES - 1; i >= 0; i--)
		if (r->fam[i].attached) {
			families[i]->record->detach(ctx, r->fam[i].state);
			r->fam[i].attached =
				0; /* the shim channel's last drain calls no hook of it */
		}
	recording__hang_free(r);
	recording__snap_free(r); /* it names stacks with the stack service */
	free(r->edge_pids);
	recording__free_services(r);
	capture_files__free(r->files);
	capture_gate__free(ctx->gate);
	ring_pump__free(r->pump);
	r->pump = ctx->pump = NULL;
	if (r->launched)
		launch__abort(&r->launch);
	if (r->flight)
		flight__free(r->flight); /* its writer with it */
	else
		trace_writer__free(r->writer);
	recording__close_maps(r);
	string_pool__free(ctx->strings);
	/* Every link of ours is closed: the held ones go, within the stop's time if they can. */
	now = mono_now_ns();
	by = stop_deadline(r, STOP_LET_GO_NS, STOP_LET_GO_MAX_MS * 1000000ull);
	link_reaper__let_go(by > now ? (by - now) / 1000000 : 0);
}

/* --dry-run: list every site found (after CMD ran, in launch mode), record nothing. */
static int dry_run(struct recording *r)
{
	uprobe_mgr__print_sites(r->uprobes, stdout);
	if (!r->launched)
		return 0;
	launch__reap(&r->launch, 1);
	r->launched = 0;
	return launch__exit_status(&r->launch);
}

int recorder__run(const struct record_opts *opts)
{
	struct recording *r = calloc(1, sizeof(*r));
	const struct record_opts *o = opts;
	enum record_outcome outcome;
	int ret = 1, cmd_status;

	if (!r)
		return 1;
	/* -p takes in its targets' existing children, as BPF does those forked from now on. */
	r->opts = *opts;
	if (!opts->no_subprocesses)
		target_tree__take_children(&r->opts);
	o = &r->opts;
	r->ctx = (struct record_ctx){ .opts = o,
				      .events_fd = -1,
				      .targets_fd = -1,
				      .excluded_fd = -1,
				      .lost_fd = -1,
				      .control_fd = -1,
				      .py_procs_fd = -1,
				      .py_codes_fd = -1,
				      .unw_rows_fd = -1,
				      .unw_procs_fd = -1,
				      .unw_cache_fd = -1 };
	r->launch = (struct launch){ .pid = -1, .gate_fd = -1 };
	/* No family takes a record until every one is attached (make_dispatch). */
	memset(r->consumers, -1, sizeof(r->consumers));
	memset(r->observers, -1, sizeof(r->observers));
	r->tty = isatty(STDERR_FILENO);
	r->ctx.self_pid = getpid();
	/* BTF for every tracepoint we use, unless forced off (kernel_features.h). */
	r->ctx.use_btf = kfeature__has(KF_TP_BTF);
	r->ctx.strings = string_pool__new();
	if (!r->ctx.strings)
		goto out;
	record_meta__fill(&r->rm, o);
	/* What CMD's environment needs, before anything is created. */
	for_each_family_while(fit, o->cmd)
		if ((o->families & (1ull << fit.i)) && fit.f->record->prelaunch &&
		    fit.f->record->prelaunch(o))
			goto out;
	catch_signals();
	if (start(r))
		goto out;
	if (o->dry_run && !r->launched) {
		ret = dry_run(r); /* -p / -a: what is mapped now is all there is to list */
		goto out;
	}
	watch_stops();
	if (o->start_at.set &&
	    start_at__begin(&o->start_at, &r->rm.meta, r->flight ? NULL : r->writer,
			    r->ctx.control_fd, &stop_signal))
		goto out;
	if (go_live(r))
		goto out;
	drain(r);
	if (o->dry_run) {
		ret = dry_run(r);
		goto out;
	}
	outcome = finish(r);
	/* CMD is the user's job: it runs to its end whatever became of the recording. */
	cmd_status = r->launched ? reap_cmd(r) : -1;
	/* The stop waited for CMD's end, which is CMD's own time: its steps' deadlines start over. */
	if (cmd_status >= 0)
		r->stop_ns = 0;
	ret = recorder__exit_status(outcome, cmd_status);
	if (outcome != RECORD_WHOLE && cmd_status >= 0)
		pr_err("the recording failed (said above): exit status 1, though the command "
		       "exited with %d\n",
		       cmd_status);
	/* Last: reading the file must not keep CMD waiting for its stop signal. */
	if (r->wrote)
		recording__print_verdict(r, stop_deadline(r, STOP_VERDICT_NS, STOP_VERDICT_MAX_NS));
	if (r->wrote && o->written)
		o->written(o->written_arg, r->verdict_path);
out:
	teardown(r);
	free(r);
	return ret;
}
