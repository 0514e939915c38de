// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Merge, first pass: one file read through, keeping what the fit and the writer need
 * (merge.h): its clocks, the ranges of its ids, its ranks and a bounded sample of its sync
 * points (each member's first MERGE_HEAD, then every stride-th sequence number, the stride
 * doubling whenever the sample is full: the files of one job keep the same sequences).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "array.h"
#include "family.h"
#include "merge.h"
#include "hmap.h"
#include "trace_meta_io.h"
#include "trace_reader.h"

struct scan {
	struct merge_input *in;
	struct hmap *member_of; /* {pid, group} -> member index + 1 */
	int err;
};

static char *dup_text(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int copy_meta(struct trace_meta *dst, const struct trace_meta *src)
{
	dst->version = src->version;
	dst->start = src->start;
	dst->hostname = dup_text(src->hostname);
	dst->kernel = dup_text(src->kernel);
	dst->boot_id = dup_text(src->boot_id);
	dst->families = dup_text(src->families);
	dst->tool_version = dup_text(src->tool_version);
	return (src->hostname && !dst->hostname) || (src->kernel && !dst->kernel) ||
			       (src->boot_id && !dst->boot_id) ||
			       (src->families && !dst->families) ||
			       (src->tool_version && !dst->tool_version)
		       ? -ENOMEM
		       : 0;
}

void merge_input__free(struct merge_input *in)
{
	if (!in)
		return;
	trace_meta__clear(&in->meta);
	free(in->members);
	free(in->pts);
}

static struct merge_member *member_get(struct scan *s, const struct sync_point *p)
{
	struct merge_input *in = s->in;
	__u32 *idx = hmap__get(s->member_of, (struct hkey){ p->pid, p->group }, 1);
	struct merge_member *m;

	if (!idx)
		return NULL;
	if (*idx)
		return &in->members[*idx - 1];
	if (array__grow_from((void **)&in->members, in->nmembers, &in->members_cap,
			     sizeof(*in->members), 8))
		return NULL;
	m = &in->members[in->nmembers];
	*m = (struct merge_member){ .group = p->group,
				    .pid = p->pid,
				    .rank = p->rank,
				    .nranks = p->nranks,
				    .inferred = !!(p->flags & SYNC_INFERRED),
				    .first_seq = p->seq };
	*idx = ++in->nmembers;
	return m;
}

static int in_head(const struct merge_input *in, const struct merge_point *p)
{
	return p->seq - in->members[p->member].first_seq < MERGE_HEAD;
}

/* The sample is full: keep heads and every (2 x stride)-th sequence. */
static void thin(struct merge_input *in)
{
	__u32 n = 0;

	in->stride *= 2;
	for (__u32 i = 0; i < in->npts; i++)
		if (in_head(in, &in->pts[i]) || in->pts[i].seq % in->stride == 0)
			in->pts[n++] = in->pts[i];
	in->npts = n;
}

static void on_point(void *arg, const struct sync_point *p)
{
	struct scan *s = arg;
	struct merge_input *in = s->in;
	struct merge_member *m = member_get(s, p);
	struct merge_point pt;

	if (!m) {
		s->err = -ENOMEM;
		return;
	}
	m->count += !(p->flags & SYNC_AGAIN);
	if (p->rank >= 0)
		m->rank = p->rank;
	if (p->nranks > m->nranks)
		m->nranks = p->nranks;
	if (p->flags & SYNC_NO_END)
		return; /* its rank, its size: the file's rank record names them; nothing to fit */
	pt = (struct merge_point){ p->group, p->seq, p->end_ts, p->pid, (__u32)(m - in->members) };
	if (!in_head(in, &pt) && pt.seq % in->stride)
		return;
	if (in->npts == MERGE_POINTS_MAX)
		thin(in);
	if (in->npts == MERGE_POINTS_MAX || (!in_head(in, &pt) && pt.seq % in->stride))
		return; /* heads alone fill it (hundreds of members): the rest are not needed */
	if (array__grow((void **)&in->pts, in->npts, &in->pts_cap, sizeof(*in->pts))) {
		s->err = -ENOMEM;
		return;
	}
	in->pts[in->npts++] = pt;
}

/* What one record tells the scan besides its sync points. */
static void scan_record(struct merge_input *in, const struct bs_hdr *rec)
{
	if (!in->records++ || rec->ts < in->first_ts)
		in->first_ts = rec->ts;
	if (rec->ts > in->last_ts)
		in->last_ts = rec->ts;
	if (rec->pid > in->max_pid)
		in->max_pid = rec->pid;
	if (rec->tid > in->max_pid)
		in->max_pid = rec->tid;
	if (rec->type == BS_REC_STRING && rec->size >= sizeof(struct bs_string) &&
	    ((const struct bs_string *)rec)->id > in->max_string)
		in->max_string = ((const struct bs_string *)rec)->id;
	else if (rec->type == BS_REC_STACK && rec->size >= sizeof(struct bs_stack) &&
		 ((const struct bs_stack *)rec)->id > in->max_stack)
		in->max_stack = ((const struct bs_stack *)rec)->id;
	else if (rec->type == BS_REC_RANK || rec->type == BS_REC_SYNC_BASE)
		in->merged = 1;
	else if (!family__decoder(rec->type))
		in->unknown_records++;
}

/* The families' sync hooks over one file, each with its state. */
struct syncs {
	void *st[FAMILY_MAX];
};

static int syncs__open(struct syncs *y, const struct trace_meta *meta)
{
	memset(y, 0, sizeof(*y));
	for_each_family_slot(it, y->st)
		if (it.f->decode->sync && !(*it.slot = it.f->decode->sync->new (meta)))
			return -ENOMEM;
	return 0;
}

/* The points the hooks still hold (S NULL: none wanted), then their states freed. */
static void syncs__close(struct syncs *y, struct scan *s)
{
	for_each_family_slot(it, y->st) {
		if (!*it.slot)
			continue;
		if (s)
			it.f->decode->sync->finish(*it.slot, on_point, s);
		it.f->decode->sync->free(*it.slot);
	}
}

static int scan_records(struct scan *s, struct trace_reader *r, struct trace_model *m)
{
	const struct bs_hdr *rec;
	struct syncs y;
	int err = syncs__open(&y, trace_reader__meta(r));

	while (!err && trace_reader__next(r, &rec) == 1) {
		trace_model__observe(m, rec);
		scan_record(s->in, rec);
		for_each_family_while(fit, !err)
			if (y.st[fit.i])
				err = fit.f->decode->sync->observe(y.st[fit.i], rec, m, on_point,
								   s);
		if (!err)
			err = s->err;
	}
	syncs__close(&y, err ? NULL : s);
	return err ? err : s->err;
}

int merge_scan__file(struct merge_input *in, const char *path, char *err, size_t errlen)
{
	const struct trace_status *st;
	struct scan s = { .in = in };
	struct trace_reader *r;
	struct trace_model *m;
	int e = 0;

	in->path = path;
	in->stride = 1;
	r = trace_reader__open(path, err, errlen, &e);
	if (!r) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(e < 0 ? -e : EIO));
		return e < 0 ? e : -EIO;
	}
	m = trace_model__new();
	s.member_of = hmap__new(sizeof(__u32));
	e = !m || !s.member_of ? -ENOMEM : copy_meta(&in->meta, trace_reader__meta(r));
	if (!e)
		e = scan_records(&s, r, m);
	if (e) {
		snprintf(err, errlen, "%s", strerror(-e));
		goto out;
	}
	st = trace_reader__status(r);
	in->has_end = st->has_end;
	in->end = st->end;
	in->corrupt_chunks = st->corrupt_chunks;
	in->truncated = st->truncated;
	if (in->merged) {
		snprintf(err, errlen, "a merged file already: give the rank files it came from");
		e = -EINVAL;
	} else if (in->max_pid >> BS_RANK_NS_SHIFT) {
		snprintf(err, errlen, "pid %u is past Linux's largest (%u): not a recording",
			 in->max_pid, (1u << BS_RANK_NS_SHIFT) - 1);
		e = -EINVAL;
	} else if (!in->records) {
		snprintf(err, errlen, "no records");
		e = -ENODATA;
	}
out:
	hmap__free(s.member_of);
	trace_model__free(m);
	trace_reader__free(r);
	return e;
}
