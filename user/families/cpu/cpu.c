// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu family, record side: a cpu-clock perf event per CPU at --sample-rate runs
 * bpf/cpu.bpf.c; each sample's raw stack is symbolized and interned by the recording's stack
 * service while the process lives (stack_svc.h), and the sample is written with its stack's
 * id.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "capture_gate.h"
#include "cpu.h"
#include "kallsyms.h"
#include "kernel_features.h"
#include "family_attach.h"
#include "perf_timers.h"
#include "record_ctx.h"
#include "stack_svc.h"
#include "cpu.skel.h"
#include "msg.h"
#include "family_record.h"
#include "family_stats.h"

struct cpu_state {
	struct cpu_bpf *skel;
	struct perf_timers timers; /* one event per CPU */
	struct stack_svc *stacks;
	__u64 samples; /* written: with --capture-range, those inside its ranges */
};

/*
 * Fewer samples than this cannot say where time went: a function's share p of n samples is
 * known to within the binomial error sqrt(p(1 - p) / n), 5 points at p = 0.5 and n = 100
 * (two errors either side: 40% to 60%), worse below.
 */
#define CPU_FEW_SAMPLES 100

/*
 * --capture-range: a capture short for the rate (3 steps of 20 ms at 99 Hz: a handful) holds
 * too few samples to read a profile from; it says so rather than look like an answer.
 */
static void say_few_samples(struct record_ctx *ctx, const struct cpu_state *st)
{
	__u32 hz = ((const struct cpu_opts *)record_opts__family(ctx->opts, &family_cpu))->hz;
	__u64 ns;

	if (!ctx->gate || !capture_gate__opened(ctx->gate) || st->samples >= CPU_FEW_SAMPLES)
		return;
	ns = capture_gate__kept_ns(ctx->gate, mono_now_ns());
	pr_warn("cpu: %llu samples over %.1f ms captured at %u Hz: too few to say where "
		"time went (under %d: docs/USAGE.md); raise --sample-rate or capture longer\n",
		(unsigned long long)st->samples, ns / 1e6, hz, CPU_FEW_SAMPLES);
}

static void stop_samplers(struct cpu_state *st)
{
	perf_timers__close(&st->timers);
}

/* The end: no more samples, and those in the ring are symbolized while the processes' code
 * is still known (the discovery is freed before the families detach). */
static void cpu_stop(struct record_ctx *ctx, void *state)
{
	stop_samplers(state);
	record_ctx__poll(ctx, 0);
	say_few_samples(ctx, state);
}

static void cpu_detach(struct record_ctx *ctx, void *state)
{
	struct cpu_state *st = state;

	if (!st)
		return;
	stop_samplers(st);
	cpu_bpf__destroy(st->skel);
	free(st);
}

/*
 * The page-fault handler's code, for the samples to tell faults apart (bpf/cpu.bpf.c):
 * exc_page_fault since Linux 5.8 (its IDT and FRED entries both call it), do_page_fault before.
 * Without it the samples are kept, and only the fault-bound rule has nothing to read: said once.
 */
static void find_fault_handler(struct cpu_bpf *skel)
{
	static const char *const names[] = { "exc_page_fault", "do_page_fault" };
	__u64 lo = 0, hi = 0;
	int err = -ENOENT, e;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && err; i++) {
		e = kallsyms__range(names[i], &lo, &hi);
		if (!e || err == -ENOENT)
			err = e; /* the first reason that is not "no such name" */
	}
	if (err) {
		pr_warn("cpu: no page-fault handler in /proc/kallsyms (%s): samples in page faults "
			"are not told apart, and the verdict cannot say fault-bound\n",
			strerror(-err));
		return;
	}
	skel->rodata->fault_lo = lo;
	skel->rodata->fault_hi = hi;
}

static int cpu_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	struct cpu_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->skel = cpu_bpf__open();
	if (!st->skel) {
		cpu_detach(ctx, st);
		return -ENOMEM;
	}
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx, &family_cpu);
	find_fault_handler(st->skel);
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = cpu_bpf__load(st->skel);
	st->stacks = a->stacks; /* FAMILY_STACKS: the driver made it */
	if (!err && !st->stacks)
		err = -EINVAL;
	if (!err)
		err = perf_timers__open(
			&st->timers, st->skel->progs.cpu_sample,
			((const struct cpu_opts *)record_opts__family(ctx->opts, &family_cpu))->hz,
			0, "cpu");
	if (err) {
		cpu_detach(ctx, st);
		return err;
	}
	*state = st;
	return 0;
}

/* The raw samples BPF writes: unpacked into CPU_SAMPLE records here, never on disk. */
static const __u16 cpu_consumes[] = { BS_REC_CPU_SAMPLE_RAW, 0 };

static int cpu_consume(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	const struct bs_cpu_sample_raw *r = (const void *)rec;
	struct cpu_state *st = state;
	const __u64 *w = (const void *)(r + 1), *top;
	struct bs_cpu_sample s;
	__u32 n, npy;

	if (rec->type != BS_REC_CPU_SAMPLE_RAW)
		return 0;
	if (rec->size < sizeof(*r))
		return 1; /* not from our program: nothing to keep */
	stack_svc__raw_counts(rec->size - sizeof(*r), r->nips, r->npy, &n, &npy);
	record_ctx__hdr(&s.h, BS_REC_CPU_SAMPLE, sizeof(s), rec->pid, rec->tid, rec->ts);
	s.h.cpu = rec->cpu;
	s.flags = r->flags & (BS_CPU_KERNEL | BS_CPU_FAULT | BS_CPU_GIL | BS_CPU_PYTHON |
			      0xffffu << BS_CPU_SYSCALL_SHIFT);
	top = stack_svc__raw_top(r->flags, &w, &n);
	s.stack_id = stack_svc__stack(ctx, st->stacks, rec->pid, rec->tid, rec->ts, w, n, npy, top,
				      r->flags);
	/* Written as the ring's records are: judged by --capture-range's gate. */
	if (ctx->gate && !capture_gate__keep(ctx->gate, &s.h))
		return 1;
	st->samples++;
	record_ctx__write(ctx, &s);
	return 1;
}

/* A sample and its raw stack: cpu_consume writes it as a sample with an interned stack. */
static const __u16 cpu_ring_only[] = { BS_REC_CPU_SAMPLE_RAW, 0 };

static const struct family_record cpu_recording = {
	.needs = 1u << KF_PERF_SAMPLING | 1u << KF_BPF_LOOP,
	.options = cpu_options,
	.opts_size = sizeof(struct cpu_opts),
	.opts_init = cpu_opts_init,
	.opts_describe = cpu_opts_describe,
	.ring_only = cpu_ring_only,
	.attach = cpu_attach,
	.detach = cpu_detach,
	.consume = cpu_consume,
	.consumes = cpu_consumes,
	.stop = cpu_stop,
};

static const struct family_decode cpu_reading = {
	.decoders = cpu_decoders,
};

static const struct family_stats cpu_stats = {
	.ledger = &cpu_ledger,
	.reports = cpu_reports,
	.verdict = &cpu_verdict,
	.page = &cpu_page,
};

const struct family family_cpu = {
	.name = "cpu",
	.desc = "CPU sampling: on-CPU samples of the traced threads with their stacks",
	.flags = FAMILY_OPT_IN | FAMILY_STACKS,
	.export = &cpu_export,
	.sql = &cpu_sql,
	.top = &cpu_top,
	.record = &cpu_recording,
	.decode = &cpu_reading,
	.stats = &cpu_stats,
};
