// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* proc pseudo-family, record side: process lifecycle probes (bpf/proc.bpf.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "proc.h"
#include "proc_edges.h"
#include "family_attach.h"
#include "record_ctx.h"
#include "proc.skel.h"
#include "family_record.h"
#include "family_stats.h"

static int proc_attach(const struct family_attach *a, void **state)
{
	struct record_ctx *ctx = a->ctx;
	struct proc_bpf *skel;
	int err;

	skel = proc_bpf__open();
	if (!skel)
		return -errno;
	RECORD_CTX_SET_COMMON_RODATA(skel, ctx, &family_proc);
	RECORD_CTX_SET_EXCLUDE_RODATA(skel, ctx);
	err = record_ctx__prepare(ctx, skel->obj);
	if (!err)
		err = proc_bpf__load(skel);
	if (!err)
		err = proc_bpf__attach(skel);
	if (err) {
		proc_bpf__destroy(skel);
		return err;
	}
	*state = skel;
	return 0;
}

static void proc_detach(struct record_ctx *ctx, void *state)
{
	proc_bpf__destroy(state);
}

static const struct family_record proc_recording = {
	.attach = proc_attach,
	.detach = proc_detach,
};

static const struct family_decode proc_reading = {
	.decoders = proc_decoders,
};

static const struct family_stats proc_stats = {
	.ledger = &proc_ledger,
	.reports = proc_reports,
	.verdict = &proc_verdict,
};

const struct family family_proc = {
	.name = "proc",
	.desc = "process and thread lifecycle and names (always on)",
	.flags = FAMILY_ALWAYS,
	.export = &proc_export,
	.sql = &proc_sql,
	.record = &proc_recording,
	.decode = &proc_reading,
	.stats = &proc_stats,
};
