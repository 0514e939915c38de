// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Training steps: a TORCH_STEP record for every step that ends while recording, and
 * --capture-range=steps:[WAIT+]N[xREPEAT] (N whole training steps of a running job after WAIT
 * more, then the recording ends; REPEAT times over, each window after WAIT steps of its own,
 * as torch.profiler's schedule(wait, warmup, active, repeat) cycles, and each in a file of its
 * own: capture_files.h).
 *
 * A step is the interval between the ends of two step scopes: Optimizer.step#NAME.step, the
 * record_function every torch.optim optimizer runs its step in (so plain loops, Lightning
 * and the HF Trainer all have it), or ProfilerStep#N in a loop with no optimizer step
 * (torch.profiler's schedule). The first step scope that ends after the recording started
 * (every family attached: record_ctx.live_ns) is the first boundary (step 1 ends at the second): the gate opens there after WAIT more,
 * and closes at the end of the N-th step scope after that; window k (0-based) opens after
 * k * (WAIT + N) + WAIT steps. Only the scopes of the process, the thread and the name of
 * the first one seen count (two optimizers, or DDP ranks, do not count twice).
 *
 * The shim sends a thread's batch as soon as a step scope ends (shim_torch.c), so the gate
 * opens within the probe's latency of the boundary: events that other threads recorded in
 * between and that the recorder read before the batch are lost to the range (as for nvtx's
 * sync mode). The gate judges each event by its start (capture_gate.h), so what began in
 * the range is kept when it comes later (GPU work by its launching call).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture_gate.h"
#include "parse.h"
#include "record_ctx.h"
#include "torch.h"
#include "msg.h"

struct torch_steps {
	struct record_ctx *ctx;
	int capture;	       /* --capture-range=steps */
	__u64 skip, n, repeat; /* WAIT+NxREPEAT (REPEAT 0: one window, no x) */
	__u64 window;	       /* windows closed */
	__u64 seen;	       /* boundaries counted */
	__u64 last_end;	       /* the previous one's */
	__u32 pid, tid, name_id;
	char *name; /* the step scope counted */
	__u64 open_ts, close_ts;
	int open, done;
};

#define MAX_STEPS   1000000
#define MAX_WINDOWS 1000 /* files a schedule writes */

/* "N", "SKIP+N", "NxREPEAT" or "SKIP+NxREPEAT": 0, or -EINVAL. */
static int parse(const char *arg, __u64 *skip, __u64 *n, __u64 *repeat)
{
	const char *plus = arg ? strchr(arg, '+') : NULL;
	char *end;

	if (!arg || !*arg)
		return -EINVAL;
	*skip = *repeat = 0;
	if (plus) {
		*skip = strtoull(arg, &end, 10);
		if (end != plus || arg[0] < '0' || arg[0] > '9')
			return -EINVAL;
		arg = plus + 1;
	}
	if (arg[0] < '1' || arg[0] > '9')
		return -EINVAL;
	*n = strtoull(arg, &end, 10);
	if (*end == 'x') {
		arg = end + 1;
		if (arg[0] < '0' || arg[0] > '9')
			return -EINVAL;
		*repeat = strtoull(arg, &end, 10);
	}
	return *end || !*n || *n > MAX_STEPS || *skip > MAX_STEPS || *repeat > MAX_WINDOWS ? -EINVAL
											   : 0;
}

int torch_steps__check(const char *arg, const char *cmd)
{
	__u64 skip, n, repeat;

	if (parse(arg, &skip, &n, &repeat))
		return msg__fail(
			"bad --capture-range=steps:%s: use steps:N (N whole "
			"training steps from the next step's start), steps:WAIT+N (after WAIT "
			"more) or steps:WAIT+NxREPEAT (REPEAT windows of N, each after WAIT, each "
			"to a file of its own), N from 1 to %d, REPEAT up to %d",
			arg ? arg : "", MAX_STEPS, MAX_WINDOWS);
	return 0;
}

__u32 torch_steps__files(const char *arg)
{
	__u64 skip, n, repeat;

	return parse(arg, &skip, &n, &repeat) ? 0 : (__u32)repeat;
}

struct torch_steps *torch_steps__new(struct record_ctx *ctx, const char *arg)
{
	struct torch_steps *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = ctx;
	s->capture = arg != NULL;
	if (s->capture && parse(arg, &s->skip, &s->n, &s->repeat)) { /* checked when parsed */
		free(s);
		return NULL;
	}
	return s;
}

/* The step that ended at END: a TORCH_STEP record (the gate judges it by its start). */
static void step_record(struct torch_steps *s, __u64 end)
{
	struct bs_torch_step r;

	memset(&r, 0, sizeof(r));
	record_ctx__hdr(&r.h, BS_REC_TORCH_STEP, sizeof(r), s->pid, s->tid, s->last_end);
	r.dur = end - s->last_end;
	r.step = s->seen - 1;
	r.name_id = s->name_id;
	/*
	 * Written as the shim's records are: judged by the gate (a step inside the range). A
	 * steps capture writes the steps of its windows only: the one that starts where a
	 * window ends is not part of it (the gate keeps an event that starts at a range's end).
	 */
	if (s->capture && !s->open)
		return;
	if (!s->ctx->gate || capture_gate__keep(s->ctx->gate, &r.h))
		record_ctx__write(s->ctx, &r);
}

/* Is R the step scope counted? The first one seen chooses which. */
static int counted(struct torch_steps *s, const struct bs_torch_op *r, const char *name)
{
	if (!s->name) {
		s->name = strdup(name);
		if (!s->name)
			return 0;
		s->pid = r->h.pid;
		s->tid = r->h.tid;
		s->name_id = r->name_id;
		if (s->capture)
			pr_info("--capture-range=steps: steps end with \"%s\" "
				"(pid %u, thread %u)\n",
				name, s->pid, s->tid);
	}
	return r->h.pid == s->pid && r->h.tid == s->tid && !strcmp(name, s->name);
}

/* The window's N-th step ended at END: the gate closes; after the last window, all ends. */
static void window_closed(struct torch_steps *s, __u64 end)
{
	__u64 windows = s->repeat ? s->repeat : 1;

	s->close_ts = end;
	s->open = 0;
	s->window++;
	s->done = s->window == windows;
	/* Said first: closing the gate opens the next window's file (capture_files.h). */
	if (s->repeat)
		pr_info("--capture-range=steps: window %llu of %llu: %llu steps captured "
			"(%.3f s)%s\n",
			(unsigned long long)s->window, (unsigned long long)windows,
			(unsigned long long)s->n, (double)(s->close_ts - s->open_ts) / 1e9,
			s->done ? ": stopping" : "");
	else
		pr_info("--capture-range=steps: %llu steps captured (%.3f s): "
			"stopping\n",
			(unsigned long long)s->n, (double)(s->close_ts - s->open_ts) / 1e9);
	capture_gate__close(s->ctx->gate, end);
	s->ctx->capture_done = s->done;
}

void torch_steps__op(struct torch_steps *s, const struct bs_torch_op *r, const char *name)
{
	__u64 end = r->h.ts + r->dur, cycle;

	if (!s || !(r->flags & (BS_TORCH_STEP | BS_TORCH_PROFILER_STEP)))
		return;
	/*
	 * A capture counts the steps that end once every family is attached: a job's shim
	 * (injected first) sends steps while the others still attach (-p --inject into a job and
	 * its workers), and a window opened then would miss what those families record in it,
	 * and lie before the file's start.
	 */
	if (s->capture && (!s->ctx->live_ns || end < s->ctx->live_ns))
		return;
	/* An optimizer's step is the boundary; ProfilerStep only where none comes. */
	if ((r->flags & BS_TORCH_PROFILER_STEP) && s->name && strncmp(s->name, "ProfilerStep#", 13))
		return;
	if ((r->flags & BS_TORCH_STEP) && s->name && !strncmp(s->name, "ProfilerStep#", 13) &&
	    s->seen <= 1) {
		free(s->name); /* an optimizer appeared before the range: it decides */
		s->name = NULL;
		s->seen = 0;
	}
	if (!counted(s, r, (r->flags & BS_TORCH_PROFILER_STEP) ? "ProfilerStep#" : name))
		return;
	if (s->done)
		return; /* captured: the one starting where the range ends is not part of it */
	if (s->seen++)
		step_record(s, end);
	s->last_end = end;
	if (!s->capture)
		return;
	/* Steps since the first boundary, counted from the current window's cycle. */
	cycle = s->seen - 1 - s->window * (s->skip + s->n);
	if (s->open && cycle == s->skip + s->n) {
		window_closed(s, end);
		if (s->done)
			return;
		cycle = 0; /* the next window's cycle begins here (with WAIT 0, so does it) */
	}
	if (!s->open && cycle == s->skip) {
		s->open = 1;
		s->open_ts = end;
		capture_gate__open(s->ctx->gate, end);
	}
}

int torch_steps__waiting(const struct torch_steps *s)
{
	return s && s->capture && !s->name;
}

void torch_steps__finish(struct torch_steps *s)
{
	__u64 got;

	if (!s || !s->capture || s->done || s->ctx->capture_failed)
		return;
	if (!s->name) {
		pr_warn("--capture-range=steps: no step ended while "
			"recording (no Optimizer.step#... or ProfilerStep#N scope): nothing was "
			"kept\n");
		return;
	}
	got = s->open ? s->seen - 1 - s->window * (s->skip + s->n) - s->skip : 0;
	if (s->repeat)
		pr_warn("--capture-range=steps: the recording ended in window %llu of %llu, "
			"after %llu of its %llu steps%s\n",
			(unsigned long long)s->window + 1, (unsigned long long)s->repeat,
			(unsigned long long)got, (unsigned long long)s->n,
			s->open ? " (the last one is cut: what it did until the end is kept)"
				: " (none began)");
	else
		pr_warn("--capture-range=steps: the recording ended after %llu "
			"of %llu steps%s\n",
			(unsigned long long)got, (unsigned long long)s->n,
			s->open ? " (the last one is cut: what it did until the end is kept)"
				: " (none began: nothing was kept)");
}

void torch_steps__free(struct torch_steps *s)
{
	if (!s)
		return;
	free(s->name);
	free(s);
}
