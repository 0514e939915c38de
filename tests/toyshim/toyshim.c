// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The toy shim family: a whole family whose records the cupti-shim writes, in a folder of its
 * own as user/families/NAME/ is, added to a test build's registry by one line
 * (-DFAMILIES_EXTRA=family_toyshim: build/tests/bpfsight-toyshim) and to a test build of the
 * shim by one line (SHIM_MODULES_EXTRA=shim_toyshim_module: libbpfsight-shim-toyshim.so).
 * Nothing outside tests/toyshim/ names it: the channel attaches its site, checks and
 * translates its records and writes them from what its struct family_shim says;
 * tests/e2e/test_toyshim.py reads them back with dump, stats and export.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "family.h"
#include "family_record.h"
#include "family_stats.h"
#include "hmap.h"
#include "kernel_features.h"
#include "report.h"
#include "shim_family.h"
#include "shim_link.h"
#include "table.h"
#include "toyshim_records.h"

extern const struct family family_toyshim;

/* ---- what it tells the channel ---- */

static const struct shim_site toyshim_sites[] = { { "toyshim" }, { 0 } };

static const struct shim_rec toyshim_recs[] = {
	{ BS_REC_TOYSHIM_TICK, sizeof(struct bs_toyshim_tick),
	  .strings = { offsetof(struct bs_toyshim_tick, name_id) } },
	{ 0 },
};

static const struct shim_name toyshim_states[] = { { BS_SHIM_ST_TOYSHIM_ON, "toyshim_on" }, { 0 } };

static const struct shim_count toyshim_counts[] = { { "toyshim_ticks", "Toy Ticks" }, { 0 } };

static int toyshim_count_of(const struct bs_hdr *rec)
{
	return rec->type == BS_REC_TOYSHIM_TICK ? 0 : -1;
}

static const struct family_shim toyshim_shim = {
	.sites = toyshim_sites,
	.recs = toyshim_recs,
	.states = toyshim_states,
	.counts = toyshim_counts,
	.count_of = toyshim_count_of,
	.hint = { "LD_PRELOAD", "toy ticks (-t toyshim)", "" },
	.env = NULL, /* launch mode: LD_PRELOAD */
};

static int toyshim_prelaunch(const struct record_opts *o)
{
	return shim_link__prelaunch(o, &family_toyshim);
}

/* ---- reading ---- */

static int toyshim_decode(const struct bs_hdr *rec, const struct trace_model *m, struct event *ev)
{
	const struct bs_toyshim_tick *t = (const void *)rec;
	const char *name = t->name_id ? trace_model__string(m, t->name_id) : NULL;

	ev->name = name ? name : "?";
	event__arg_u64(ev, "value", t->value);
	return 1;
}

static const struct export_style toyshim_style = {
	.cat = "toyshim",
	.ph = 'i',
	.track = "toy shim ticks",
	.desc = "Ticks the toy shim family's module in the cupti-shim made.",
};

static const struct rec_decoder toyshim_decoders[] = {
	{ BS_REC_TOYSHIM_TICK, sizeof(struct bs_toyshim_tick), "toyshim_tick", toyshim_decode,
	  &toyshim_style, .string_offs = { offsetof(struct bs_toyshim_tick, name_id) } },
	{ 0 },
};

/* toyshim_sum: ticks and the sum of their values, by name. */
struct toyshim_sum {
	struct hmap *names; /* (string id, 0) -> struct toyshim_row */
};

struct toyshim_row {
	__u32 name_id;
	__u64 ticks, total;
};

static void *toyshim_sum__new(void)
{
	struct toyshim_sum *s = calloc(1, sizeof(*s));

	if (s && !(s->names = hmap__new(sizeof(struct toyshim_row)))) {
		free(s);
		return NULL;
	}
	return s;
}

static void toyshim_sum__add(void *st, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_toyshim_tick *t = (const void *)rec;
	struct toyshim_sum *s = st;
	struct toyshim_row *r;

	if (rec->type != BS_REC_TOYSHIM_TICK)
		return;
	r = hmap__get(s->names, (struct hkey){ t->name_id, 0 }, 1);
	if (!r)
		return;
	r->name_id = t->name_id;
	r->ticks++;
	r->total += t->value;
}

static int toyshim_sum__emit(void *st, const struct trace_model *m, struct table *t)
{
	enum { C_NAME, C_TICKS, C_TOTAL, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_NAME] = { "name", "Name", TABLE_STR },
		[C_TICKS] = { "ticks", "Ticks", TABLE_U64 },
		[C_TOTAL] = { "total", "Total", TABLE_U64 },
	};
	struct toyshim_sum *s = st;
	struct toyshim_row *r;
	size_t it = 0;

	table__add_cols(t, cols, NCOLS);
	while ((r = hmap__next(s->names, &it, NULL))) {
		const char *text = r->name_id ? trace_model__string(m, r->name_id) : NULL;

		table__row(t);
		table__set_str(t, C_NAME, text ? text : "?");
		table__set_u64(t, C_TICKS, r->ticks);
		table__set_u64(t, C_TOTAL, r->total);
	}
	return table__err(t);
}

static void toyshim_sum__free(void *st)
{
	struct toyshim_sum *s = st;

	if (!s)
		return;
	hmap__free(s->names);
	free(s);
}

static const struct report toyshim_sum = {
	.name = "toyshim_sum",
	.desc = "Toy shim ticks by name",
	.new = toyshim_sum__new,
	.add = toyshim_sum__add,
	.emit = toyshim_sum__emit,
	.free = toyshim_sum__free,
};

static const struct report *const toyshim_reports[] = { &toyshim_sum, NULL };

static const struct family_record toyshim_recording = {
	.shim = &toyshim_shim,
	.ring_only = shim_ring_only,
	/* shim.bpf.c tells the USDT sites apart by their cookies */
	.needs = 1u << KF_ATTACH_COOKIE,
	.attach = shim_link__attach,
	.poll = shim_link__poll,
	.detach = shim_link__detach,
	.consume = shim_link__consume,
	.consumes = shim_link_consumes,
	.stop = shim_link__stop,
	.prelaunch = toyshim_prelaunch,
};

static const struct family_decode toyshim_reading = {
	.decoders = toyshim_decoders,
};

static const struct family_stats toyshim_stats = {
	.reports = toyshim_reports,
};

const struct family family_toyshim = {
	.name = "toyshim",
	.desc = "a test's family whose ticks the cupti-shim writes (tests/toyshim/)",
	.flags = FAMILY_OPT_IN | FAMILY_SHIM,
	.record = &toyshim_recording,
	.decode = &toyshim_reading,
	.stats = &toyshim_stats,
};
