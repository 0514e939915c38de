// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --trigger hang:DUR: when a process of the job stopped moving (flight_hang.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family.h"
#include "flight_hang.h"
#include "hmap.h"
#include "trace_model.h"

/* A process's steps: the last one's end, and whether its silence since has fired. */
struct progress {
	__u64 last_ts;
	__u64 fired_at; /* last_ts when a stall fired on it, 0 = none */
};

/* A rank's main thread: its CPU time, since when it has not changed, when last looked at. */
struct rank_cpu {
	__u64 cpu_ns, since, look;
	__s32 rank;
};

/* A call in flight that fired: it does not fire again while it stays in flight. */
struct fired {
	__u64 look; /* the last look that saw it */
};

struct flight_hang {
	__u64 dur_ns;
	const char *text;
	__u8 watches[BS_REC_TYPE_MAX];
	struct hmap *progress;	   /* {pid, 0} -> struct progress */
	struct hmap *fired;	   /* {tid, entry ts} -> struct fired */
	struct hmap *ranks;	   /* {pid, 0} -> struct rank_cpu */
	__u64 ranks_fired;	   /* the latest "since" of the ranks' stall that fired, 0: none */
	struct trace_model *model; /* decodes a call's name: no names needed beyond the table's */
	__u64 now, look;
	/*
	 * Every call of this look not fired yet ({tid, entry ts}), and the oldest of those over
	 * DUR: a stall fires for all of them (the waiters that entered later are the same hang).
	 */
	struct hkey *seen;
	size_t nseen, cap;
	int have_call;
	__u32 call_pid, call_tid;
	__u64 call_ts;
	char call_name[64];
};

struct flight_hang *flight_hang__new(const struct flight_opts *fo, int *err)
{
	struct flight_hang *h;

	*err = 0;
	if (!fo->hang_ns)
		return NULL;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->progress = hmap__new(sizeof(struct progress))) ||
	    !(h->fired = hmap__new(sizeof(struct fired))) ||
	    !(h->ranks = hmap__new(sizeof(struct rank_cpu))) || !(h->model = trace_model__new())) {
		flight_hang__free(h);
		*err = -ENOMEM;
		return NULL;
	}
	h->dur_ns = fo->hang_ns;
	h->text = fo->hang_text;
	for_each_family(fit)
		for (const __u16 *t = fit.f->decode->progress; t && *t; t++)
			if (*t < BS_REC_TYPE_MAX)
				h->watches[*t] = 1;
	h->watches[BS_REC_EXIT] = 1;
	return h;
}

void flight_hang__free(struct flight_hang *h)
{
	if (!h)
		return;
	hmap__free(h->progress);
	hmap__free(h->fired);
	hmap__free(h->ranks);
	trace_model__free(h->model);
	free(h->seen);
	free(h);
}

int flight_hang__watches(const struct flight_hang *h, __u16 type)
{
	return h && type < BS_REC_TYPE_MAX && h->watches[type];
}

void flight_hang__observe(struct flight_hang *h, const struct bs_hdr *rec)
{
	struct progress *p;

	if (rec->type == BS_REC_EXIT) {
		if (rec->size >= sizeof(struct bs_exit) &&
		    ((const struct bs_exit *)rec)->group_dead)
			hmap__del(h->progress, (struct hkey){ rec->pid, 0 });
		return;
	}
	p = hmap__get(h->progress, (struct hkey){ rec->pid, 0 }, 1);
	if (p && rec->ts > p->last_ts)
		p->last_ts = rec->ts; /* out of memory: that process's steps are not watched */
}

void flight_hang__begin(struct flight_hang *h, __u64 now)
{
	h->now = now;
	h->look++;
	h->have_call = 0;
	h->nseen = 0;
}

void flight_hang__thread(struct flight_hang *h, __u32 pid, __u32 tid, const struct bs_hdr *rec)
{
	struct fired *f;
	struct event ev;

	if (!rec)
		return;
	f = hmap__get(h->fired, (struct hkey){ tid, rec->ts }, 0);
	if (f) {
		f->look = h->look; /* still the same stall */
		return;
	}
	if (!array__grow((void **)&h->seen, h->nseen, &h->cap, sizeof(*h->seen)))
		h->seen[h->nseen++] = (struct hkey){ tid, rec->ts };
	if (rec->ts + h->dur_ns > h->now || (h->have_call && rec->ts >= h->call_ts))
		return;
	h->have_call = 1;
	h->call_pid = pid;
	h->call_tid = tid;
	h->call_ts = rec->ts;
	event__init(&ev, rec, "");
	snprintf(h->call_name, sizeof(h->call_name), "%s",
		 family__decode(rec, h->model, &ev) == 1 && ev.name ? ev.name : "a call");
}

void flight_hang__rank(struct flight_hang *h, __u32 pid, __s32 rank, __u64 cpu_ns)
{
	struct rank_cpu *r = hmap__get(h->ranks, (struct hkey){ pid, 0 }, 1);

	if (!r)
		return;
	if (!r->look || r->cpu_ns != cpu_ns) {
		r->cpu_ns = cpu_ns;
		r->since = h->now;
	}
	r->rank = rank;
	r->look = h->look;
}

/*
 * Every rank looked at now has not run for DUR (two at least), a stall not fired yet: 1, the
 * lowest rank's pid, WHY.
 */
static int ranks_still(struct flight_hang *h, char *why, size_t len, __u32 *pid)
{
	__u64 latest = 0;
	__s32 low = -1;
	struct rank_cpu *r;
	struct hkey key;
	size_t it = 0, n = 0;

	while ((r = hmap__next(h->ranks, &it, &key))) {
		if (r->look != h->look) { /* exited, or no more a target */
			hmap__del(h->ranks, key);
			it = 0;
			n = 0;
			latest = 0;
			low = -1;
			continue;
		}
		if (r->since + h->dur_ns > h->now)
			return 0; /* this one ran within DUR */
		n++;
		latest = r->since > latest ? r->since : latest;
		if (low < 0 || r->rank < low) {
			low = r->rank;
			*pid = (__u32)key.a;
		}
	}
	if (n < 2 || latest <= h->ranks_fired)
		return 0;
	h->ranks_fired = latest;
	snprintf(why, len, "%s: %zu ranks stopped: their main threads have not run for %.1f s",
		 h->text, n, (h->now - latest) / 1e9);
	return 1;
}

/* Calls that fired and are no longer in flight: a later stall of that thread fires again. */
static void forget_returned(struct flight_hang *h)
{
	struct hkey key;
	struct fired *f;
	size_t it = 0;

	while ((f = hmap__next(h->fired, &it, &key)))
		if (f->look != h->look) {
			hmap__del(h->fired, key);
			it = 0;
		}
}

/* A process whose steps stopped DUR ago, not fired yet: 1 and its pid. */
static int silent_process(struct flight_hang *h, __u32 *pid, __u64 *since)
{
	struct progress *p;
	struct hkey key;
	size_t it = 0;

	while ((p = hmap__next(h->progress, &it, &key)))
		if (p->last_ts + h->dur_ns <= h->now && p->fired_at != p->last_ts) {
			p->fired_at = p->last_ts;
			*pid = (__u32)key.a;
			*since = p->last_ts;
			return 1;
		}
	return 0;
}

int flight_hang__stalled(struct flight_hang *h, char *why, size_t len, __u32 *pid)
{
	struct fired *f;
	__u64 since;

	if (h->have_call) {
		/* One hang, one dump: every call in flight now fires with the oldest. */
		for (size_t i = 0; i < h->nseen; i++)
			if ((f = hmap__get(h->fired, h->seen[i], 1)))
				f->look = h->look;
		forget_returned(h);
		*pid = h->call_pid;
		snprintf(why, len, "%s: pid %u tid %u in %s for %.1f s", h->text, h->call_pid,
			 h->call_tid, h->call_name, (h->now - h->call_ts) / 1e9);
		return 1;
	}
	forget_returned(h);
	if (ranks_still(h, why, len, pid))
		return 1;
	if (!silent_process(h, pid, &since))
		return 0;
	snprintf(why, len, "%s: pid %u ended no step for %.1f s", h->text, *pid,
		 (h->now - since) / 1e9);
	return 1;
}
