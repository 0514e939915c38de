// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The osrt family's metrics: system calls and their time per process and call, and a
 * latency histogram per call for the node, whose first bucket is the calls under
 * --osrt-threshold (counted in the kernel: SYSCALL_AGG snapshots, turned into increments).
 */
#include <errno.h>
#include <stdlib.h>
#include "metrics_family.h"
#include "osrt.h"
#include "record_ctx.h"
#include "syscall_names.h"
#include "hmap.h"

/* The series' names: every call (--osrt-mode exact) or the sleeps inside calls (blocked). */
struct osrt_names {
	const char *calls, *calls_help, *seconds, *seconds_help, *hist, *hist_help;
};

static const struct osrt_names exact_names = {
	"bpfsight_syscalls_total",
	"System calls made.",
	"bpfsight_syscall_seconds_total",
	"Time spent in system calls.",
	"bpfsight_syscall_duration_seconds",
	"System call latency, every traced process; the first bucket is the in-kernel count of "
	"calls under --osrt-threshold.",
};

/* Other names, not the same ones counting less: a dashboard of calls must not read sleeps. */
static const struct osrt_names blocked_names = {
	"bpfsight_syscall_blocks_total",
	"Times a system call went to sleep (--osrt-mode blocked: calls that never sleep are not "
	"counted).",
	"bpfsight_syscall_blocked_seconds_total",
	"Time system calls spent asleep, off CPU (--osrt-mode blocked).",
	"bpfsight_syscall_block_duration_seconds",
	"How long system calls slept, every traced process; the first bucket is the in-kernel "
	"count of sleeps under --osrt-threshold.",
};

/*
 * Each record says which it is (BS_SYSCALL_BLOCKED, BS_AGG_BLOCKED): a series is keyed
 * {nr, blocked}, and each set of names is rendered when the mode asks for it or it has data (a
 * kernel without task storage records every call whatever monitor's default).
 */
struct osrt_metrics {
	struct hmap *last;	/* {pid << 32 | tid, nr} -> m_count: the last in-kernel total */
	struct hmap *hist;	/* {nr, blocked} -> m_hist */
	struct m_bounds bounds; /* from --osrt-threshold */
	int mode_blocked;	/* the recording's --osrt-mode as resolved when it opened */
	int seen[2];		/* records of every call, of sleeps */
};

/* Per series: {nr, blocked} -> m_count. */
struct osrt_series {
	struct hmap *calls;
};

static void osrt_metrics_free(void *st)
{
	struct osrt_metrics *om = st;

	if (!om)
		return;
	hmap__free(om->last);
	hmap__free(om->hist);
	free(om);
}

static int osrt_metrics_open(const struct record_opts *o, void **st)
{
	struct osrt_metrics *om = calloc(1, sizeof(*om));
	const char *why;

	if (om) {
		om->last = hmap__new(sizeof(struct m_count));
		om->hist = hmap__new(sizeof(struct m_hist));
	}
	if (!om || !om->last || !om->hist) {
		osrt_metrics_free(om);
		return -ENOMEM;
	}
	/* Calls under the threshold are only counted in BPF: the first bucket holds them all. */
	m_bounds__init(&om->bounds, osrt_opts(o)->threshold_ns);
	om->mode_blocked = osrt_blocked(o, &why);
	*st = om;
	return 0;
}

static void series_free(void *counters)
{
	hmap__free(((struct osrt_series *)counters)->calls);
}

static void count(struct metrics *m, __u32 pid, __u32 nr, int blocked, __u64 n, __u64 total)
{
	struct osrt_series *s = metrics__series(m, &family_osrt, pid, n);
	struct m_count *c =
		s ? m_map__at(&s->calls, sizeof(*c), (struct hkey){ nr, blocked }) : NULL;

	if (c) {
		c->count += n;
		c->total_ns += total;
	}
}

static void osrt_metrics_record(struct metrics *m, void *st, const struct bs_hdr *h)
{
	struct osrt_metrics *om = st;
	struct m_hist *hist;

	if (h->type == BS_REC_SYSCALL) {
		const struct bs_syscall *r = (const void *)h;
		int blocked = !!(r->flags & BS_SYSCALL_BLOCKED);

		om->seen[blocked] = 1;
		count(m, h->pid, r->nr, blocked, 1, r->dur);
		if ((hist = hmap__get(om->hist, (struct hkey){ r->nr, blocked }, 1)))
			m_hist__add(hist, &om->bounds, r->dur, 1, r->dur);
	} else if (h->type == BS_REC_SYSCALL_AGG) {
		const struct bs_syscall_agg *r = (const void *)h;
		int blocked = !!(r->flags & BS_AGG_BLOCKED);
		struct hkey key = { (__u64)h->pid << 32 | h->tid, (__u64)blocked << 32 | r->nr };
		struct m_count d = m_count__delta(om->last, key, r->count, r->total_ns);

		if (r->flags & BS_AGG_FINAL) /* the thread is gone: a later snapshot is a new one */
			hmap__del(om->last, key);
		if (!d.count)
			return;
		om->seen[blocked] = 1;
		count(m, h->pid, r->nr, blocked, d.count, d.total_ns);
		/* Every one of them was under the threshold: the first bucket, exactly. */
		if ((hist = hmap__get(om->hist, (struct hkey){ r->nr, blocked }, 1)))
			m_hist__add(hist, &om->bounds, 0, d.count, d.total_ns);
	}
}

/* One set of names: the series of every call (BLOCKED 0) or of sleeps (1). */
static void render_set(FILE *f, struct osrt_metrics *om, const struct metrics_owner *ow, size_t n,
		       int blocked)
{
	const struct osrt_names *nm = blocked ? &blocked_names : &exact_names;
	const struct osrt_series *s;
	const struct m_count *c;
	const struct m_hist *h;
	struct hkey k;
	char labels[128];
	size_t it;

	metrics__head(f, nm->calls, "counter", nm->calls_help);
	for (size_t i = 0; i < n; i++)
		for (it = 0, s = metrics_owner__series(&ow[i], &family_osrt);
		     s && s->calls && (c = hmap__next(s->calls, &it, &k));) {
			if ((int)k.b != blocked)
				continue;
			fprintf(f, "%s{", nm->calls);
			metrics__owner_labels(f, &ow[i]);
			fprintf(f, ",syscall=\"%s\"} %llu\n", syscall_name(k.a),
				(unsigned long long)c->count);
		}
	metrics__head(f, nm->seconds, "counter", nm->seconds_help);
	for (size_t i = 0; i < n; i++)
		for (it = 0, s = metrics_owner__series(&ow[i], &family_osrt);
		     s && s->calls && (c = hmap__next(s->calls, &it, &k));) {
			if ((int)k.b != blocked)
				continue;
			fprintf(f, "%s{", nm->seconds);
			metrics__owner_labels(f, &ow[i]);
			fprintf(f, ",syscall=\"%s\"} %.9f\n", syscall_name(k.a), c->total_ns / 1e9);
		}
	metrics__head(f, nm->hist, "histogram", nm->hist_help);
	for (it = 0; (h = hmap__next(om->hist, &it, &k));) {
		if ((int)k.b != blocked)
			continue;
		snprintf(labels, sizeof(labels), "syscall=\"%s\"", syscall_name(k.a));
		metrics__hist_lines(f, nm->hist, labels, h, &om->bounds);
	}
}

static void osrt_metrics_render(FILE *f, void *st, const struct metrics_owner *ow, size_t n)
{
	struct osrt_metrics *om = st;

	if (om->seen[0] || !om->mode_blocked)
		render_set(f, om, ow, n, 0);
	if (om->seen[1] || om->mode_blocked)
		render_set(f, om, ow, n, 1);
}

const struct metrics_family osrt_metrics = {
	.series_size = sizeof(struct osrt_series),
	.series_free = series_free,
	.open = osrt_metrics_open,
	.free = osrt_metrics_free,
	.record = osrt_metrics_record,
	.render = osrt_metrics_render,
};
