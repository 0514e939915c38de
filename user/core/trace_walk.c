// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The shared reading loop of info, dump and stats; see trace_walk.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "trace_walk.h"
#include "msg.h"

int trace_walk__open(struct trace_walk *w, const char *cmd, const char *path)
{
	char err[256] = "";
	int e = 0;

	memset(w, 0, sizeof(*w));
	w->cmd = cmd;
	w->path = path;
	w->r = trace_reader__open(path, err, sizeof(err), &e);
	if (!w->r) {
		pr_err("%s: %s\n", path, err[0] ? err : strerror(e < 0 ? -e : EIO));
		return EXIT_READ_FAIL;
	}
	w->m = trace_model__new();
	if (!w->m) {
		pr_err("%s: %s\n", path, strerror(ENOMEM));
		trace_reader__free(w->r);
		w->r = NULL;
		return EXIT_READ_FAIL;
	}
	trace_model__set_start(w->m, trace_reader__meta(w->r)->start.mono_ns);
	for_each_family(it) {
		const struct family_reorder *h = it.f->decode->reorder;
		void *st;

		if (!h)
			continue;
		st = h->new (trace_reader__meta(w->r));
		if (!st) {
			pr_warn("%s: %s (%s)\n", path, h->without, strerror(ENOMEM));
			continue;
		}
		w->stages[w->nstages++] = (struct trace_walk_stage){ it.f, st, 0 };
	}
	return 0;
}

/* The next record out of reorder hook I (-1: the file's next): 0 at the end. */
static int pull(struct trace_walk *w, int i, const struct bs_hdr **recp)
{
	struct trace_walk_stage *s;
	const struct family_reorder *h;
	const struct bs_hdr *rec;

	if (i < 0)
		return trace_reader__next(w->r, recp);
	s = &w->stages[i];
	h = s->f->decode->reorder;
	for (;;) {
		if ((*recp = h->next(s->st)))
			return 1;
		if (s->ended)
			return 0;
		if (!pull(w, i - 1, &rec)) {
			s->ended = 1;
			h->end(s->st);
			continue;
		}
		if (h->feed(s->st, rec)) {
			*recp = rec;
			return 1;
		}
	}
}

/* Add loss record L to the walk's counts by family and cause. */
static void count_by_family(struct trace_walk *w, const struct bs_loss *l)
{
	const char *fam = loss__family_name(l);
	__u32 slot = loss_cause__slot(l->cause);
	int i;

	for (i = 0; i < w->nlost_by; i++)
		if (!strcmp(w->lost_by[i].family, fam) && w->lost_by[i].slot == slot)
			break;
	if (i == w->nlost_by && w->nlost_by < TRACE_WALK_LOSSES)
		w->lost_by[w->nlost_by++] = (struct trace_walk_loss){ fam, slot, 0 };
	else if (i == w->nlost_by)
		i--;
	w->lost_by[i].count += l->count;
}

/*
 * REC, an interval that began before the start: a copy clipped to it (its begin told to the
 * model). One that ended before the start too is outside the recording (what the probes saw
 * while the recorder set up, an older record of a flight window's first chunk): NULL, counted;
 * but for a cupti-shim family's (SHIM), whose clock is the job's CUPTI converted, not the
 * probes': handed as it is.
 */
static const struct bs_hdr *clip(struct trace_walk *w, const struct bs_hdr *rec, int shim)
{
	__u64 start = trace_model__start(w->m), dur, end;
	struct bs_hdr *c;

	memcpy(&dur, rec + 1, sizeof(dur));
	end = rec->ts + dur;
	if (end < rec->ts || end <= start) {
		w->before++;
		return shim ? rec : NULL;
	}
	if (rec->size > w->clip_cap) {
		void *p = realloc(w->clip, rec->size);

		if (!p)
			return rec; /* as it is: out of memory */
		w->clip = p;
		w->clip_cap = rec->size;
	}
	c = w->clip;
	memcpy(c, rec, rec->size);
	dur = end - start;
	c->ts = start;
	memcpy(c + 1, &dur, sizeof(dur));
	trace_model__set_clipped(w->m, c, rec->ts);
	w->clipped++;
	return c;
}

/* Read whole: the footer's end, for what asks how long a thread was observed. 0. */
static int trace_walk__end(struct trace_walk *w)
{
	const struct trace_status *st = trace_reader__status(w->r);

	if (st->has_end)
		trace_model__set_end(w->m, st->end.mono_ns);
	return 0;
}

int trace_walk__next(struct trace_walk *w, const struct bs_hdr **recp,
		     const struct rec_decoder **decp)
{
	const struct rec_decoder *dec;
	int fam = 0;
	const struct bs_hdr *rec;
	const struct bs_loss *l;

	if (!pull(w, w->nstages - 1, &rec))
		return trace_walk__end(w);
again:
	dec = family__decoder_at(rec->type, &fam);
	if (dec && dec->span && rec->size >= sizeof(*rec) + 8 && rec->size >= dec->min_size &&
	    rec->ts && rec->ts < trace_model__start(w->m)) { /* ts 0: no time known (CUPTI's) */
		rec = clip(w, rec, (families[fam]->flags & FAMILY_SHIM) != 0);
		if (!rec) {
			if (!pull(w, w->nstages - 1, &rec))
				return trace_walk__end(w);
			goto again;
		}
	}
	*recp = rec;
	*decp = dec;
	if (dec && rec->size < dec->min_size) {
		/* The reader checked the chunk; a short record means a writer bug: say so once. */
		if (!w->short_records++)
			pr_warn("%s: record of type 0x%02x is %u bytes, "
				"needs %u: skipping such records\n",
				w->path, rec->type, rec->size, dec->min_size);
		return 2;
	}
	trace_model__observe(w->m, rec);
	if (rec->type == BS_REC_LOSS) {
		l = (const void *)rec;
		w->lost[loss_cause__slot(l->cause)] += l->count;
		w->lost_total += l->count;
		count_by_family(w, l);
	}
	return 1;
}

const struct trace_meta *trace_walk__meta(const struct trace_walk *w)
{
	return trace_reader__meta(w->r);
}

const struct trace_status *trace_walk__status(const struct trace_walk *w)
{
	return trace_reader__status(w->r);
}

int trace_walk__loss_summary(const struct trace_walk *w, char *buf, size_t len)
{
	size_t used = 0;
	int n;

	buf[0] = 0;
	if (!w->lost_total)
		return 0;
	for (int i = 0; i < w->nlost_by; i++) {
		const struct trace_walk_loss *b = &w->lost_by[i];

		n = snprintf(buf + used, len - used, "%s%s %s: %llu", used ? ", " : "", b->family,
			     loss_cause_name(b->slot), (unsigned long long)b->count);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += n;
	}
	return 1;
}

int trace_walk__finish(struct trace_walk *w)
{
	const struct trace_status *st = trace_reader__status(w->r);
	int status = EXIT_READ_OK;

	if (w->quiet)
		; /* the caller says it */
	else if (st->truncated && st->writer_pid)
		pr_note("%s is a recording in progress (recorder pid %u): showing "
			"the %u chunks written so far\n",
			w->path, st->writer_pid, st->chunks);
	else if (st->truncated)
		pr_warn("%s was not closed cleanly (recorder killed, or its disk "
			"full?): "
			"showing the %u complete chunks\n",
			w->path, st->chunks);
	if (st->corrupt_chunks) {
		pr_warn("%s: %u corrupt chunks skipped (%llu bytes passed "
			"over): the output is incomplete\n",
			w->path, st->corrupt_chunks, (unsigned long long)st->skipped_bytes);
		status = EXIT_READ_CORRUPT;
	}
	if (w->short_records) {
		pr_warn("%s: %llu records too short for their type "
			"were skipped\n",
			w->path, (unsigned long long)w->short_records);
		status = EXIT_READ_CORRUPT;
	}
	return status;
}

void *trace_walk__reorder_state(const struct trace_walk *w, const struct family *f)
{
	for (int i = 0; i < w->nstages; i++)
		if (w->stages[i].f == f)
			return w->stages[i].ended ? w->stages[i].st : NULL;
	return NULL;
}

void trace_walk__close(struct trace_walk *w)
{
	free(w->clip);
	w->clip = NULL;
	for (int i = 0; i < w->nstages; i++)
		w->stages[i].f->decode->reorder->free(w->stages[i].st);
	w->nstages = 0;
	trace_reader__free(w->r);
	trace_model__free(w->m);
	w->r = NULL;
	w->m = NULL;
}
