// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What a recording says once it is written: its file, its losses, its ranges, its verdict. */
#include <errno.h>
#include <stdio.h>
#include "capture_gate.h"
#include "elf_syms.h"
#include "family.h"
#include "family_record.h"
#include "record_losses.h"
#include "recording.h"
#include "ring_pump.h"
#include "stack_svc.h"
#include "msg.h"

void recording__print_verdict(const struct recording *r, __u64 by_ns)
{
	const struct record_opts *o = r->ctx.opts;
	const char *path = r->verdict_path;
	char line[512] = "";
	int err = o->verdict_line ? o->verdict_line(path, by_ns, line, sizeof(line)) : 0;

	if (err == -EFBIG)
		pr_info("verdict: bpfsight stats %s (the file is large)\n", path);
	else if (err == -ETIME)
		pr_info("verdict: bpfsight stats %s (reading it would hold up the stop)\n", path);
	else if (!err && line[0])
		pr_info("verdict: %s (bpfsight stats %s shows why)\n", line, path);
}

/* What the unwind tables took, when any file needed one (docs/STACKS.md, "Unwind tables"). */
static void say_unwind(struct stack_svc *s)
{
	struct bs_unwind_usage u;
	char line[256];

	if (!stack_svc__unwind_record(s, &u))
		return;
	unwind_usage__text(&u, line, sizeof(line));
	pr_info("unwind tables: %s\n", line);
}

void recording__say_written(struct recording *r, __u64 nrec, const char *how)
{
	const struct record_opts *o = r->ctx.opts;
	size_t queued = ring_pump__held_peak(r->ctx.pump);
	char by[512];

	char what[4200];

	record_losses__summary(r->seen_lost, by, sizeof(by));
	if (r->flight)
		snprintf(what, sizeof(what), "recorded %llu records", (unsigned long long)nrec);
	else
		snprintf(what, sizeof(what), "wrote %s: %llu records", recording__out_path(r),
			 (unsigned long long)nrec);
	pr_info("%s, %llu events lost%s%s%s%s\n", what, (unsigned long long)r->lost_total, by,
		how ? " (" : "", how ? how : "", how ? ")" : "");
	if (!r->flight && queued > o->ringbuf_bytes) /* flight__finish says it */
		pr_info("the recording fell behind: up to %.1f MiB of records "
			"waited in memory (more than the %.0f MiB ring holds: the ring pump, "
			"user/record/ring_pump.h)\n",
			queued / 1048576.0, o->ringbuf_bytes / 1048576.0);
	say_unwind(r->stacks);
	if (demangle__over_budget())
		pr_warn("%llu C++ names were over the demangler's budget (1 KiB mangled, 64 KiB "
			"demangled): shown mangled\n",
			demangle__over_budget());
}

enum record_outcome recording__say_captured(struct recording *r)
{
	const struct record_ctx *ctx = &r->ctx;
	const struct record_opts *o = ctx->opts;
	unsigned long long dropped = capture_gate__dropped(ctx->gate);

	if (!capture_gate__opened(ctx->gate) && ctx->capture_failed) {
		pr_err("--capture-range=%s%s%s: nothing was captured (said above)\n",
		       o->capture->record->capture->kind, o->capture_arg ? ":" : "",
		       o->capture_arg ? o->capture_arg : "");
		return RECORD_NOTHING_CAPTURED;
	}
	if (!capture_gate__opened(ctx->gate)) {
		pr_err("--capture-range=%s%s%s: no range opened while recording: nothing was "
		       "captured (%llu events outside it not kept); %s\n",
		       o->capture->record->capture->kind, o->capture_arg ? ":" : "",
		       o->capture_arg ? o->capture_arg : "", dropped,
		       o->capture->record->capture->arg
			       ? "check the name, and that the program gets there "
				 "while recording"
			       : "check that the program gets there while recording");
		return RECORD_NOTHING_CAPTURED;
	}
	pr_info("--capture-range: %llu ranges captured; %llu events outside the ranges were not "
		"kept\n",
		(unsigned long long)capture_gate__opened(ctx->gate), dropped);
	return RECORD_WHOLE;
}
