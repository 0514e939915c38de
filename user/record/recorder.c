// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * One recording, start to finish: create the shared maps, attach the families, release a
 * launched CMD, drain the ring buffer into the writer until the targets exit, the duration
 * ends or a signal comes, then detach, drain what is left and close the file.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "capture_gate.h"
#include "family.h"
#include "flight_recorder.h"
#include "kernel_features.h"
#include "launch.h"
#include "proc_meta.h"
#include "recorder.h"
#include "stack_svc.h"
#include "string_pool.h"
#include "trace_writer.h"
#include "uprobe_mgr.h"

#define POLL_MS	       20	    /* ring buffer drain period when no wakeup comes */
#define HOUSEKEEP_NS   100000000ull /* losses, targets, chunk age */
#define FAMILY_POLL_NS 1000000000ull
#define STATUS_NS      1000000000ull

static volatile sig_atomic_t stop_signal, flush_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*
 * SIGUSR1/SIGUSR2: make what was recorded so far readable on disk, and go on recording; with
 * --flight-recorder, dump the window instead.
 */
static void on_flush_signal(int sig)
{
	flush_signal = sig;
}

/* The maps every family shares live as long as the recording, independent of families. */
static int create_shared_maps(struct record_ctx *ctx)
{
	LIBBPF_OPTS(bpf_map_create_opts, no_prealloc, .map_flags = BPF_F_NO_PREALLOC);

	ctx->events_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0,
					ctx->opts->ringbuf_bytes, NULL);
	if (ctx->events_fd < 0)
		return -errno;
	ctx->targets_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "targets", sizeof(__u32), sizeof(__u8),
					 record_ctx__map_entries("targets") ?: 65536, NULL);
	if (ctx->targets_fd < 0)
		return -errno;
	ctx->lost_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "lost", sizeof(__u32),
				      sizeof(__u64), BS_LOSS_NR, NULL);
	if (ctx->lost_fd < 0)
		return -errno;
	ctx->py_procs_fd = bpf_map_create(
		BPF_MAP_TYPE_HASH, "py_procs", sizeof(__u32), sizeof(struct bs_py_cfg),
		record_ctx__map_entries("py_procs") ?: 4096, &no_prealloc);
	if (ctx->py_procs_fd < 0)
		return -errno;
	ctx->py_codes_fd =
		bpf_map_create(BPF_MAP_TYPE_LRU_HASH, "py_codes", sizeof(struct bs_py_code_key),
			       sizeof(struct bs_py_code_id), BS_PY_CODES, NULL);
	if (ctx->py_codes_fd < 0)
		return -errno;
	return 0;
}

static int add_target(struct record_ctx *ctx, pid_t pid)
{
	__u32 key = pid;
	__u8 one = 1;

	if (bpf_map_update_elem(ctx->targets_fd, &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

static int on_record(void *arg, void *data, size_t size)
{
	struct record_ctx *ctx = arg;
	const struct bs_hdr *h = data;
	int consumed = 0;

	/* BPF wrote it, but the contract is checked on both sides. */
	if (size < sizeof(*h) || h->size != size || size % 8)
		return 0;
	for (int i = 0; families[i] && !consumed; i++)
		if (ctx->attached[i] && families[i]->consume)
			consumed = families[i]->consume(ctx, ctx->states[i], h);
	if (consumed)
		return 0;
	if (h->type == BS_REC_STACK_RAW) {
		if (ctx->stacks)
			stack_svc__consume(ctx, ctx->stacks, h);
		return 0;
	}
	if (h->type == BS_REC_CPU_SAMPLE_RAW || h->type == BS_REC_SHIM_BATCH)
		return 0; /* ring-only, and the family that unpacks it is gone: never on disk */
	if (ctx->stacks)
		stack_svc__observe(ctx, ctx->stacks, h);
	for (int i = 0; families[i]; i++)
		if (ctx->attached[i] && families[i]->observe)
			families[i]->observe(ctx, ctx->states[i], h);
	if (ctx->uprobes)
		uprobe_mgr__observe(ctx->uprobes, h);
	else if (h->type == BS_REC_MAP_EXEC && size >= sizeof(struct bs_map_exec) &&
		 (((const struct bs_map_exec *)h)->flags & BS_MAP_EXEC_STOPPED))
		kill(h->pid, SIGCONT); /* probes already gone: never leave a process stopped */
	if (ctx->gate && !capture_gate__keep(ctx->gate, h))
		return 0;
	record_ctx__write(ctx, h);
	if (h->type == BS_REC_FORK || h->type == BS_REC_EXEC)
		proc_meta__observe(ctx, h);
	return 0;
}

/* Turn increases of the BPF loss counters into LOSS records. */
static void account_losses(struct record_ctx *ctx, __u64 *seen, __u64 *total)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc(ncpu, sizeof(*vals))))
		return;
	for (__u32 cause = 0; cause < BS_LOSS_NR; cause++) {
		__u64 sum = 0;

		if (bpf_map_lookup_elem(ctx->lost_fd, &cause, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		if (cause == BS_LOSS_ATTACH)
			sum += ctx->attach_failures;
		sum += ctx->lost_user[cause];
		if (sum > seen[cause]) {
			struct bs_loss r = { .cause = cause, .count = sum - seen[cause] };

			record_ctx__hdr(&r.h, BS_REC_LOSS, sizeof(r), 0, 0, 0);
			record_ctx__write(ctx, &r);
			*total += sum - seen[cause];
			seen[cause] = sum;
		}
	}
	free(vals);
}

static void fill_meta(struct trace_meta *m, const struct record_opts *o, char *buf_fams,
		      size_t fams_len, char *target, size_t target_len, char *options,
		      size_t options_len, struct utsname *u, char *kernel, size_t kernel_len,
		      char *boot_id, size_t boot_len)
{
	char missing[160];
	FILE *f;
	size_t used = 0;

	memset(m, 0, sizeof(*m));
	uname(u);
	snprintf(kernel, kernel_len, "%s %s", u->release, u->version);
	boot_id[0] = 0;
	f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (fgets(boot_id, boot_len, f))
			boot_id[strcspn(boot_id, "\n")] = 0;
		fclose(f);
	}
	buf_fams[0] = 0;
	for (int i = 0; families[i]; i++)
		if (o->families & (1ull << i))
			used += snprintf(buf_fams + used, fams_len - used, "%s%s", used ? "," : "",
					 families[i]->name);
	if (o->system_wide) {
		snprintf(target, target_len, "system-wide");
	} else {
		used = 0;
		if (o->cmd) {
			used += snprintf(target, target_len, "launch:");
			for (char **a = o->cmd; *a && used < target_len; a++)
				used += snprintf(target + used, target_len - used, " %s", *a);
		}
		for (__u32 i = 0; i < o->npids && used < target_len; i++)
			used += snprintf(target + used, target_len - used, "%s%d",
					 i ? "," : (used ? "; pid: " : "pid: "), o->pids[i]);
	}
	kfeatures__missing(missing, sizeof(missing));
	snprintf(options, options_len,
		 "osrt_threshold_ns=%llu ringbuf_bytes=%llu duration_ns=%llu sample_rate=%u%s%s",
		 (unsigned long long)o->osrt_threshold_ns, (unsigned long long)o->ringbuf_bytes,
		 (unsigned long long)o->duration_ns, o->sample_rate, *missing ? " without=" : "",
		 missing);
	m->version = 1;
	m->hostname = u->nodename;
	m->kernel = kernel;
	m->boot_id = boot_id;
	m->cmdline = (char *)o->cmdline;
	m->families = buf_fams;
	m->target = target;
	m->options = options;
	m->tool_version = BPFSIGHT_VERSION;
	trace_clocks__now(&m->start);
}

static void print_status(struct record_ctx *ctx, __u64 start, __u64 now, __u64 lost, int final)
{
	double secs = (now - start) / 1e9;
	__u64 ev = trace_writer__records(ctx->writer);

	fprintf(stderr, "\r\033[K[bpfsight] %.1fs  %llu events  %.0f ev/s  lost %llu  %.1f MiB%s",
		secs, (unsigned long long)ev, secs > 0 ? ev / secs : 0.0, (unsigned long long)lost,
		trace_writer__bytes(ctx->writer) / 1048576.0, final ? "\n" : "");
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
		fprintf(stderr,
			"bpfsight record: stopped (%s) during start-up: CMD was not run "
			"(exit status 127)\n",
			strsignal(stop_signal));
	} else
		launch__go(l);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * Writing failed (a full disk): the chunk that failed was cut off again, so the file's small
 * end (a loss record counting what was dropped, the footer) often still fits. Then the file
 * is closed cleanly and says what it misses (write_failed); else it ends without a footer.
 */
static void close_after_write_error(struct record_ctx *ctx, const char *path)
{
	struct bs_loss r = { .cause = BS_LOSS_WRITE };
	int err;

	/* What is pending first: if it fails too, it is counted in the loss record. */
	trace_writer__flush(ctx->writer);
	r.count = trace_writer__dropped(ctx->writer);
	record_ctx__hdr(&r.h, BS_REC_LOSS, sizeof(r), 0, 0, 0);
	/* A footer without the loss record would claim a complete file. */
	err = trace_writer__append(ctx->writer, &r.h);
	if (!err)
		err = trace_writer__flush(ctx->writer);
	if (err)
		trace_writer__free(ctx->writer);
	else
		err = trace_writer__close(ctx->writer, NULL);
	ctx->writer = NULL;
	fprintf(stderr, "bpfsight record: writing %s failed: %s; %llu records dropped; %s\n", path,
		strerror(-ctx->write_err), (unsigned long long)r.count,
		err ? "the file holds the chunks written before, without its end (readers say "
		      "it was not closed cleanly)"
		    : "the file is closed and counts them as lost (write_failed)");
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

/* What the records so far miss from the kernel: losses, the families' in-kernel totals. */
static void bring_up_to_date(struct record_ctx *ctx, __u64 *seen_lost, __u64 *lost_total)
{
	account_losses(ctx, seen_lost, lost_total);
	for (int i = 0; families[i]; i++)
		if (ctx->attached[i] && families[i]->poll)
			families[i]->poll(ctx, ctx->states[i]);
}

/*
 * SIGUSR1/SIGUSR2 (the ring buffer was just drained): losses and the families' in-kernel
 * totals are written as on a poll, and the open chunk goes to disk, so the file read now (it
 * has no footer yet: readers take it as a recording in progress) holds everything up to
 * the signal. The signal is not passed on to CMD.
 */
static void flush_now(struct record_ctx *ctx, __u64 *seen_lost, __u64 *lost_total)
{
	int err;

	bring_up_to_date(ctx, seen_lost, lost_total);
	if (!ctx->writer)
		return;
	err = trace_writer__flush(ctx->writer);
	if (err) {
		if (!ctx->write_err)
			ctx->write_err = err; /* ends the recording as any failed write does */
		return;
	}
	fprintf(stderr, "bpfsight record: flushed %llu records to %s\n",
		(unsigned long long)trace_writer__records(ctx->writer), ctx->opts->output);
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

int recorder__run(const struct record_opts *o)
{
	struct record_ctx ctx = { .opts = o,
				  .events_fd = -1,
				  .targets_fd = -1,
				  .lost_fd = -1,
				  .py_procs_fd = -1,
				  .py_codes_fd = -1 };
	void **states = ctx.states;
	int *attached = ctx.attached;
	struct launch launch = { .pid = -1, .gate_fd = -1 };
	struct ring_buffer *rb = NULL;
	__u64 seen_lost[BS_LOSS_NR] = {}, lost_total = 0;
	__u64 start, now, last_keep = 0, last_poll = 0, last_status = 0;
	struct trace_meta meta;
	struct trace_clocks end;
	struct utsname uts;
	char fams[256], target[1024], options[256], kernel[512], boot_id[64];
	int tty = isatty(STDERR_FILENO), err, ret = 1, launched = 0;
	const char *cmd = o->cmd_name ? o->cmd_name : "record";
	struct sigaction sa = { .sa_handler = on_signal }, fsa = { .sa_handler = on_flush_signal };

	ctx.self_pid = getpid();
	/* BTF for every tracepoint we use, unless forced off (kernel_features.h). */
	ctx.use_btf = kfeature__has(KF_TP_BTF);
	ctx.strings = string_pool__new();
	if (!ctx.strings)
		return 1;
	fill_meta(&meta, o, fams, sizeof(fams), target, sizeof(target), options, sizeof(options),
		  &uts, kernel, sizeof(kernel), boot_id, sizeof(boot_id));
	/* What CMD's environment needs, before anything is created. */
	for (int i = 0; o->cmd && families[i]; i++) {
		if (!(o->families & (1ull << i)) || !families[i]->prelaunch)
			continue;
		if (families[i]->prelaunch(o))
			goto out;
	}
	if (!o->dry_run && o->flight.window_ns) {
		/* Nothing goes to -o: the window stays in memory until a trigger dumps it. */
		ctx.flight = flight__new(&o->flight, &meta, o->output, o->force, cmd, &err);
		if (!ctx.flight) {
			fprintf(stderr, "bpfsight %s: cannot start the flight recorder: %s\n", cmd,
				strerror(-err));
			goto out;
		}
		ctx.writer = flight__writer(ctx.flight);
	} else if (!o->dry_run && o->output) {
		ctx.writer = trace_writer__open(o->output, &meta, o->force ? TRACE_WRITER_FORCE : 0,
						&err);
	}
	/* monitor without --flight-recorder writes no file: its records go to the sink only. */
	if (!o->dry_run && (o->output || o->flight.window_ns) && !ctx.writer) {
		fprintf(stderr, "bpfsight record: cannot create %s: %s%s\n", o->output,
			strerror(-err), err == -EEXIST ? " (use --force to overwrite)" : "");
		goto out;
	}
	/* Signals stop the recording cleanly from here on; none restarts a syscall. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&fsa.sa_mask);
	sigaction(SIGUSR1, &fsa, NULL);
	sigaction(SIGUSR2, &fsa, NULL);
	if (o->cmd) {
		err = launch__start(&launch, o->cmd);
		if (err) {
			fprintf(stderr, "bpfsight record: cannot start %s: %s\n", o->cmd[0],
				strerror(-err));
			goto out;
		}
		launched = 1;
	}
	raise_fd_limit();
	err = create_shared_maps(&ctx);
	if (err) {
		fprintf(stderr, "bpfsight record: cannot create BPF maps: %s\n", strerror(-err));
		goto out;
	}
	if (o->capture_range != RECORD_CAPTURE_ALL && !(ctx.gate = capture_gate__new()))
		goto out;
	/* Targets first: families that look for code to probe scan them as they attach. */
	if (launched) {
		ctx.launch_pid = launch.pid;
		if (add_target(&ctx, launch.pid))
			goto out;
	}
	for (__u32 i = 0; i < o->npids; i++) {
		if (add_target(&ctx, o->pids[i]))
			goto out;
	}
	/* Before the families: the service hears only of code examined after it exists. */
	if (record_opts__wants_stacks(o) && !stack_svc__get(&ctx, &err)) {
		fprintf(stderr, "bpfsight record: cannot start the stack service: %s\n",
			strerror(-err));
		goto out;
	}
	for (int i = 0; families[i]; i++) {
		if (!(o->families & (1ull << i)))
			continue;
		err = families[i]->attach(&ctx, &states[i]);
		if (err) {
			fprintf(stderr, "bpfsight record: cannot load the %s family: %s\n",
				families[i]->name, strerror(-err));
			goto out;
		}
		attached[i] = 1;
	}
	if (ctx.uprobes)
		uprobe_mgr__start(ctx.uprobes);
	if (ctx.stacks)
		stack_svc__start(&ctx, ctx.stacks);
	if (o->dry_run && !launched) {
		/* -p / -a: what is mapped now is all there is to list. */
		uprobe_mgr__print_sites(ctx.uprobes, stdout);
		ret = 0;
		goto out;
	}
	rb = ring_buffer__new(ctx.events_fd, on_record, &ctx, NULL);
	if (!rb) {
		fprintf(stderr, "bpfsight record: cannot open the ring buffer: %s\n",
			strerror(errno));
		goto out;
	}
	ctx.rb = rb;
	if (o->system_wide)
		proc_meta__snapshot_all(&ctx);
	for (__u32 i = 0; i < o->npids; i++)
		proc_meta__snapshot(&ctx, o->pids[i], 1);
	if (launched) {
		proc_meta__snapshot(&ctx, launch.pid, 1);
		release_cmd(&launch);
	}

	/* Scripts wait for this line: every probe is live from here on. */
	if (ctx.flight) {
		char first[4096];

		flight_opts__dump_path(o->output, 1, first, sizeof(first));
		fprintf(stderr,
			"bpfsight %s: recording %s to %s%sflight recorder: the last %s, "
			"dumped to %s... on a trigger or SIGUSR1 (families: %s); Ctrl-C to stop\n",
			cmd, target, o->sink_name ? o->sink_name : "memory",
			o->sink_name ? " and memory, " : ", ", o->flight.text, first, fams);
	} else {
		fprintf(stderr, "bpfsight %s: recording %s to %s (families: %s); Ctrl-C to stop\n",
			cmd, target,
			o->dry_run  ? "nothing (--dry-run)"
			: o->output ? o->output
				    : o->sink_name,
			fams);
	}
	start = last_keep = last_poll = last_status = mono_now_ns();
	for (;;) {
		err = ring_buffer__poll(rb, POLL_MS);
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "bpfsight record: ring buffer: %s\n", strerror(-err));
			break;
		}
		ring_buffer__consume(rb);
		now = mono_now_ns();
		if (stop_signal || ctx.write_err)
			break;
		if (ctx.uprobes)
			uprobe_mgr__poll(ctx.uprobes); /* files mapped since: bounded by POLL_MS */
		if (ctx.stacks)
			stack_svc__poll(&ctx, ctx.stacks); /* pythons still starting */
		if (o->duration_ns && now - start >= o->duration_ns)
			break;
		if (flush_signal) {
			int sig = flush_signal;

			flush_signal = 0;
			if (!ctx.flight) {
				flush_now(&ctx, seen_lost, &lost_total);
				continue;
			}
			flight__trigger(ctx.flight, sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2");
		}
		if (ctx.flight && flight__due(ctx.flight, now)) {
			/* The window ends now: in-kernel totals and losses first, as a flush. */
			bring_up_to_date(&ctx, seen_lost, &lost_total);
			flight__dump(ctx.flight);
			continue;
		}
		if (now - last_keep < HOUSEKEEP_NS)
			continue;
		last_keep = now;
		account_losses(&ctx, seen_lost, &lost_total);
		if (ctx.flight)
			flight__tick(ctx.flight, now);
		else if (ctx.writer)
			trace_writer__tick(ctx.writer, now);
		if (!o->system_wide && !targets_alive(o, &launch))
			break;
		if (now - last_poll >= FAMILY_POLL_NS) {
			last_poll = now;
			for (int i = 0; families[i]; i++)
				if (attached[i] && families[i]->poll)
					families[i]->poll(&ctx, states[i]);
		}
		if (tty && ctx.writer && now - last_status >= STATUS_NS) {
			last_status = now;
			print_status(&ctx, start, now, lost_total, 0);
		}
	}

	if (o->dry_run) {
		uprobe_mgr__print_sites(ctx.uprobes, stdout);
		ret = 0;
		if (launched) {
			launch__reap(&launch, 1);
			ret = launch__exit_status(&launch);
			launched = 0;
		}
		goto out;
	}
	/* Producers that buffer (the cupti-shim) flush first, the probes still attached. */
	for (int i = 0; families[i]; i++)
		if (attached[i] && families[i]->stop)
			families[i]->stop(&ctx, states[i]);
	/* Stacks in the ring are named while the processes' code is still known. */
	ring_buffer__consume(rb);
	/* Stop the probes first (each family writes its final state), then drain. */
	uprobe_mgr__free(ctx.uprobes);
	ctx.uprobes = NULL;
	for (int i = RECORD_MAX_FAMILIES - 1; i >= 0; i--)
		if (attached[i]) {
			families[i]->detach(&ctx, states[i]);
			attached[i] = 0;
		}
	ring_buffer__consume(rb);
	account_losses(&ctx, seen_lost, &lost_total);
	now = mono_now_ns();
	if (tty && ctx.writer)
		print_status(&ctx, start, now, lost_total, 1);
	if (ctx.flight) {
		/* A dump still waiting for its --trigger-after is written with what there is. */
		flight__finish(ctx.flight);
		fprintf(stderr, "bpfsight record: recorded %llu records, %llu events lost%s\n",
			(unsigned long long)trace_writer__records(ctx.writer),
			(unsigned long long)lost_total, stop_signal ? " (stopped by signal)" : "");
		ret = ctx.write_err ? 1 : 0;
		goto finish_launched;
	}
	if (ctx.write_err) {
		close_after_write_error(&ctx, o->output);
		goto out;
	}
	if (!ctx.writer) { /* monitor: the records went to the sink only */
		fprintf(stderr, "bpfsight %s: stopped%s: %llu events lost\n", cmd,
			stop_signal ? " by signal" : "", (unsigned long long)lost_total);
		ret = 0;
		goto out;
	}
	trace_clocks__now(&end);
	{
		__u64 nrec = trace_writer__records(ctx.writer);

		err = trace_writer__close(ctx.writer, &end);
		ctx.writer = NULL;
		if (err) {
			fprintf(stderr, "bpfsight record: closing %s: %s\n", o->output,
				strerror(-err));
			goto out;
		}
		fprintf(stderr, "bpfsight record: wrote %s: %llu records, %llu events lost%s\n",
			o->output, (unsigned long long)nrec, (unsigned long long)lost_total,
			stop_signal ? " (stopped by signal)" : "");
		if (ctx.gate)
			fprintf(stderr,
				"bpfsight record: --capture-range: %llu events outside the "
				"ranges were not kept\n",
				(unsigned long long)capture_gate__dropped(ctx.gate));
	}
	ret = 0;
finish_launched:
	if (launched) {
		/* A launched CMD is the user's job: pass our stop on, then report its status. */
		if (!launch.reaped && stop_signal)
			kill(launch.pid, stop_signal);
		else if (!launch.reaped && o->kill_signal)
			kill(launch.pid, o->kill_signal);
		launch__reap(&launch, 1);
		ret = launch__exit_status(&launch);
		launched = 0;
	}
out:
	uprobe_mgr__free(ctx.uprobes);
	ctx.uprobes = NULL; /* families' detach must not use it (gil checks) */
	for (int i = RECORD_MAX_FAMILIES - 1; i >= 0; i--)
		if (attached[i])
			families[i]->detach(&ctx, states[i]);
	capture_gate__free(ctx.gate);
	stack_svc__free(ctx.stacks);
	ring_buffer__free(rb);
	if (launched)
		launch__abort(&launch);
	if (ctx.flight)
		flight__free(ctx.flight); /* its writer with it */
	else
		trace_writer__free(ctx.writer);
	if (ctx.events_fd >= 0)
		close(ctx.events_fd);
	if (ctx.targets_fd >= 0)
		close(ctx.targets_fd);
	if (ctx.lost_fd >= 0)
		close(ctx.lost_fd);
	if (ctx.py_procs_fd >= 0)
		close(ctx.py_procs_fd);
	if (ctx.py_codes_fd >= 0)
		close(ctx.py_codes_fd);
	string_pool__free(ctx.strings);
	return ret;
}
