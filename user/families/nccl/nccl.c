// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nccl family, record side: the generic uprobe pair (bpf/ucall.bpf.c) on every function of
 * nccl_table wherever libnccl code is mapped (shared, or linked into libtorch_cuda.so).
 * Communicators are joined with their rank on the reading side (nccl_decode.c's walk); with
 * --flight-recorder the walk also runs here, so each dump begins with the communicators made
 * before its window (nccl_window.h); with --trigger hang, the calls in flight are told.
 */
#include <errno.h>
#include <stdlib.h>
#include "family_attach.h"
#include "nccl.h"
#include "nccl_window.h"
#include "record_ctx.h"
#include "ucall_family.h"
#include "family_record.h"
#include "family_stats.h"

struct nccl_state {
	void *ucall;		    /* the generic program's copy (ucall_family.h) */
	struct nccl_window *window; /* --flight-recorder only */
};

static void nccl_detach(struct record_ctx *ctx, void *state)
{
	struct nccl_state *st = state;

	if (!st)
		return;
	ucall_family__detach(ctx, st->ucall);
	nccl_window__free(st->window);
	free(st);
}

static int nccl_attach(const struct family_attach *a, void **state)
{
	const struct record_opts *o = a->ctx->opts;
	struct nccl_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	err = o->flight.window_ns && !(st->window = nccl_window__new(o->flight.window_ns))
		      ? -ENOMEM
		      : ucall_family__attach(a, &st->ucall);
	if (err) {
		nccl_detach(a->ctx, st);
		return err;
	}
	*state = st;
	return 0;
}

static void nccl_observe(struct record_ctx *ctx, void *state, const struct bs_hdr *rec)
{
	struct nccl_state *st = state;

	if (st->window)
		nccl_window__observe(st->window, rec);
}

static int nccl_prologue(struct record_ctx *ctx, void *state, __u64 from, family_dump_write_fn fn,
			 void *arg)
{
	struct nccl_state *st = state;

	return st->window ? nccl_window__prologue(st->window, from, fn, arg) : 0;
}

static void nccl_in_flight(struct record_ctx *ctx, void *state, family_in_flight_fn fn, void *arg)
{
	ucall_family__in_flight(ctx, ((struct nccl_state *)state)->ucall, fn, arg);
}

static const __u16 nccl_observes[] = { BS_REC_NCCL_CALL, BS_REC_EXIT, 0 };

static const struct loss_cause nccl_losses[] = {
	UCALL_LOSS_TOO_DEEP(BS_LOSS_NCCL_DEPTH, "nccl_too_deep"),
	{ 0 },
};

static const struct family_record nccl_recording = {
	.needs = UCALL_FAMILY_NEEDS,
	.stack_default_ns = 100000, /* --stacks=nccl: calls of 100 us or more */
	.attach = nccl_attach,
	.detach = nccl_detach,
	.observe = nccl_observe,
	.observes = nccl_observes,
	.flight_prologue = nccl_prologue,
	.in_flight = nccl_in_flight, /* a collective entered and not left: a hang */
};

static const struct family_decode nccl_reading = {
	.walk_new = nccl_walk__new,
	.walk_observe = nccl_walk__observe,
	.walk_free = nccl_walk__free,
	.decoders = nccl_decoders,
	.sync = &nccl_sync,
};

static const struct family_stats nccl_stats = {
	.ledger = &nccl_ledger,
	.reports = nccl_reports,
	.verdict = &nccl_verdict,
};

const struct family family_nccl = {
	.name = "nccl",
	.flags = FAMILY_UPROBES,
	.desc = "NCCL calls: collectives, point-to-point, groups, communicators (uprobes)",
	.api = &nccl_table,
	.stack_call_key = "nccl_call",
	.losses = nccl_losses,
	.export = &nccl_export,
	.sql = &nccl_sql,
	.metrics = &nccl_metrics,
	.record = &nccl_recording,
	.decode = &nccl_reading,
	.stats = &nccl_stats,
};
