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
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "capture_gate.h"
#include "cpu.h"
#include "kernel_features.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "stack_svc.h"
#include "cpu.skel.h"
#include "msg.h"

struct cpu_state {
	struct cpu_bpf *skel;
	struct bpf_link **links; /* one per CPU that has a perf event */
	int nlinks;
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
	for (int i = 0; i < st->nlinks; i++)
		bpf_link__destroy(st->links[i]);
	st->nlinks = 0;
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
	free(st->links);
	cpu_bpf__destroy(st->skel);
	free(st);
}

/* A software cpu-clock event on every online CPU, all running the sampler. */
static int open_samplers(struct record_ctx *ctx, struct cpu_state *st)
{
	int ncpu = libbpf_num_possible_cpus(), fd, err = 0;
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq =
			((const struct cpu_opts *)record_opts__family(ctx->opts, &family_cpu))->hz,
	};

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	st->links = calloc(ncpu, sizeof(*st->links));
	if (!st->links)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* a possible CPU that is not online */
			err = -errno;
			pr_err("cpu: perf_event_open on CPU %d: %s\n", cpu, strerror(errno));
			return err;
		}
		st->links[st->nlinks] =
			bpf_program__attach_perf_event(st->skel->progs.cpu_sample, fd);
		if (!st->links[st->nlinks]) {
			err = -errno;
			close(fd);
			return err;
		}
		st->nlinks++;
	}
	return st->nlinks ? 0 : -ENODEV;
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
	RECORD_CTX_SET_COMMON_RODATA(st->skel, ctx);
	err = record_ctx__prepare(ctx, st->skel->obj);
	if (!err)
		err = cpu_bpf__load(st->skel);
	st->stacks = a->stacks; /* FAMILY_STACKS: the driver made it */
	if (!err && !st->stacks)
		err = -EINVAL;
	if (!err)
		err = open_samplers(ctx, st);
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
	s.flags = r->flags & (BS_CPU_KERNEL | BS_CPU_GIL | BS_CPU_PYTHON);
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

const struct family family_cpu = {
	.name = "cpu",
	.desc = "CPU sampling: on-CPU samples of the traced threads with their stacks",
	.flags = FAMILY_OPT_IN | FAMILY_STACKS,
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
	.decoders = cpu_decoders,
	.reports = cpu_reports,
	.verdict = &cpu_verdict,
	.sqlite = &cpu_sqlite,
	.page = &cpu_page,
	.top = &cpu_top,
};
