// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The toy family: its decoder and style, its report, option, loss cause, capture kind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "table.h"
#include "toy.h"
#include "msg.h"
#include "record_ctx.h"
#include "family_record.h"
#include "family_stats.h"

static int toy_decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct toy_tick *t = (const void *)rec;

	ev->name = "tick";
	ev->dur = t->dur;
	event__arg_u64(ev, "value", t->value);
	return 1;
}

const struct export_style toy_style = {
	.cat = "toy_cat",
	.ph = 'X',
	.track = "toy ticks",
	.desc = "Ticks of the toy family.",
};

const struct rec_decoder toy_decoders[] = {
	{ TOY_REC, sizeof(struct toy_tick), "toy_tick", toy_decode, &toy_style },
	{ 0 },
};

static void *toy_sum__new(void)
{
	return calloc(1, sizeof(struct toy_sum));
}

void toy_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	struct toy_sum *s = st;

	if (rec->type != TOY_REC)
		return;
	s->n++;
	s->total += ((const struct toy_tick *)rec)->value;
}

static int toy_sum__emit(void *st, const struct trace_model *m, struct table *t)
{
	enum { C_TICKS, C_TOTAL, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_TICKS] = { "ticks", "Ticks", TABLE_U64 },
		[C_TOTAL] = { "total", "Total", TABLE_U64 },
	};
	struct toy_sum *s = st;

	table__add_cols(t, cols, NCOLS);
	table__row(t);
	table__set_u64(t, C_TICKS, s->n);
	table__set_u64(t, C_TOTAL, s->total);
	return table__err(t);
}

static const struct report toy_sum = {
	.name = "toy_sum",
	.desc = "Toy ticks",
	.new = toy_sum__new,
	.add = toy_sum__add,
	.emit = toy_sum__emit,
	.free = free,
};

const struct report *const toy_reports[] = { &toy_sum, NULL };

void toy_opts_init(void *opts, const char *cmd)
{
	((struct toy_opts *)opts)->scale = !strcmp(cmd, "monitor") ? 2 : 1;
}

static int toy_parse_scale(void *opts, const char *arg, const char *cmd)
{
	char *end;

	((struct toy_opts *)opts)->scale = strtoull(arg, &end, 10);
	if (*end || end == arg)
		return msg__fail("bad --toy-scale '%s': a number", arg);
	return 0;
}

const struct family_option toy_options[] = {
	{ "toy-scale", "N", "the toy's metrics multiply its values by N",
	  FAMILY_OPT_RECORD | FAMILY_OPT_MONITOR, toy_parse_scale },
	{ 0 },
};

static const struct loss_cause toy_losses[] = {
	{ TOY_LOSS, "toy_dropped", "ticks the toy could not keep" },
	{ 0 },
};

static const struct family_capture toy_capture = { .kind = "toyRange", .arg = ":N" };

/* --trigger toy:tick: every tick dumps the flight recorder's window. */
static const struct family_trigger toy_triggers[] = {
	{ "tick", TOY_REC, "a tick" },
	{ 0 },
};

static const struct family_record toy_recording = {
	.options = toy_options,
	.opts_size = sizeof(struct toy_opts),
	.opts_init = toy_opts_init,
	.capture = &toy_capture,
};

static const struct family_decode toy_reading = {
	.triggers = toy_triggers,
	.decoders = toy_decoders,
	.reorder = &toy_reorder,
};

static const struct family_stats toy_stats = {
	.reports = toy_reports,
	.verdict = &toy_verdict,
	.page = &toy_page,
};

const struct family family_toy = {
	.name = "toy",
	.desc = "a family that exists only in this test",
	.export = &toy_export,
	.losses = toy_losses,
	.metrics = &toy_metrics,
	.top = &toy_top,
	.record = &toy_recording,
	.decode = &toy_reading,
	.stats = &toy_stats,
};
