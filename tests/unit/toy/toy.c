// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy family: who it is (its name, its loss cause) and its decode side (its decoder and
 * style, its trigger, its reorder hook); each other side is a file of its own: toy_record.c,
 * toy_report.c, toy_export.c, toy_metrics.c, toy_top.c (and the plug-ins they point to).
 */
#include "toy.h"

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

static const struct loss_cause toy_losses[] = {
	{ TOY_LOSS, "toy_dropped", "ticks the toy could not keep" },
	{ 0 },
};

/* --trigger toy:tick: every tick dumps the flight recorder's window. */
static const struct family_trigger toy_triggers[] = {
	{ "tick", TOY_REC, "a tick" },
	{ 0 },
};

static const struct family_decode toy_reading = {
	.triggers = toy_triggers,
	.decoders = toy_decoders,
	.reorder = &toy_reorder,
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
