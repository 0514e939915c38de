// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Training steps: a TORCH_STEP record for every step that ends while recording, and
 * --capture-range=steps:N and steps:SKIP+N (N whole training steps of a running job, then
 * the recording ends).
 *
 * A step is the interval between the ends of two step scopes: Optimizer.step#NAME.step, the
 * record_function every torch.optim optimizer runs its step in (so plain loops, Lightning
 * and the HF Trainer all have it), or ProfilerStep#N in a loop with no optimizer step
 * (torch.profiler's schedule). The first step scope that ends after the recording started
 * is the first boundary (step 1 ends at the second): the gate opens there after SKIP more,
 * and closes at the end of the N-th step scope after that. Only the scopes of the process, the thread and the name of the
 * first one seen count (two optimizers, or DDP ranks, do not count twice).
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
#include "record_args.h"
#include "record_ctx.h"
#include "torch.h"
#include "msg.h"

struct torch_steps {
	struct record_ctx *ctx;
	int capture; /* --capture-range=steps */
	__u64 skip, n;
	__u64 seen;	/* boundaries counted */
	__u64 last_end; /* the previous one's */
	__u32 pid, tid, name_id;
	char *name; /* the step scope counted */
	__u64 open_ts, close_ts;
	int open, done;
};

/* "N" or "SKIP+N": 0, or -EINVAL. */
static int parse(const char *arg, __u64 *skip, __u64 *n)
{
	const char *plus = arg ? strchr(arg, '+') : NULL;
	char *end;

	if (!arg || !*arg)
		return -EINVAL;
	*skip = 0;
	if (plus) {
		*skip = strtoull(arg, &end, 10);
		if (end != plus || arg[0] < '0' || arg[0] > '9')
			return -EINVAL;
		arg = plus + 1;
	}
	if (arg[0] < '1' || arg[0] > '9')
		return -EINVAL;
	*n = strtoull(arg, &end, 10);
	return *end || !*n || *n > 1000000 || *skip > 1000000 ? -EINVAL : 0;
}

int torch_steps__check(const char *arg, const char *cmd)
{
	__u64 skip, n;

	if (parse(arg, &skip, &n))
		return record_args__fail(
			cmd,
			"bad --capture-range=steps:%s: use steps:N (N whole "
			"training steps from the next step's start) or steps:SKIP+N "
			"(after SKIP more), N from 1 to 1000000",
			arg ? arg : "");
	return 0;
}

struct torch_steps *torch_steps__new(struct record_ctx *ctx, const char *arg)
{
	struct torch_steps *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = ctx;
	s->capture = arg != NULL;
	if (s->capture && parse(arg, &s->skip, &s->n)) { /* checked when parsed: never here */
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
	/* Written as the shim's records are: judged by the gate (a step inside the range). */
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

void torch_steps__op(struct torch_steps *s, const struct bs_torch_op *r, const char *name)
{
	__u64 end = r->h.ts + r->dur;

	if (!s || !(r->flags & (BS_TORCH_STEP | BS_TORCH_PROFILER_STEP)))
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
	if (s->seen - 1 == s->skip) {
		s->open = 1;
		s->open_ts = end;
		capture_gate__open(s->ctx->gate, end);
		return;
	}
	if (s->open && s->seen - 1 - s->skip == s->n) {
		s->close_ts = end;
		capture_gate__close(s->ctx->gate, end);
		s->open = 0;
		s->done = 1;
		s->ctx->capture_done = 1;
		pr_info("--capture-range=steps: %llu steps captured (%.3f s): "
			"stopping\n",
			(unsigned long long)s->n, (double)(s->close_ts - s->open_ts) / 1e9);
	}
}

void torch_steps__finish(struct torch_steps *s)
{
	__u64 got;

	if (!s || !s->capture || s->done)
		return;
	if (!s->name) {
		pr_warn("--capture-range=steps: no step ended while "
			"recording (no Optimizer.step#... or ProfilerStep#N scope): nothing was "
			"kept\n");
		return;
	}
	got = s->open ? s->seen - 1 - s->skip : 0;
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
