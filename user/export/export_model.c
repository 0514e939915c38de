// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The export model's calls (export_model.h): each goes to the sink's renderer when the sink
 * renders the item's view, and the renderers' loop over the families' hooks. Nothing here
 * knows a format or a family.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export_model.h"
#include "ucall_records.h"

static const struct ex_column event_class_cols[] = {
	{ "id", EX_COL_INTEGER, EX_COL_NOT_NULL | EX_COL_KEY },
	{ "name", EX_COL_TEXT, EX_COL_NOT_NULL },
	{ "label", EX_COL_TEXT },
	{ 0 },
};

const struct ex_table ex_event_classes = {
	.name = "ENUM_NSYS_EVENT_CLASS",
	.cols = event_class_cols,
};

int ex_event_class(struct ex_sink *s, int id, const char *name, const char *label)
{
	return ex_row(s, &ex_event_classes, EX_ROW_ADD,
		      (struct ex_value[]){ EX_V_INT(id), EX_V_TEXT(name), EX_V_TEXT(label) }, NULL);
}

int ex_ucall_row(struct ex_sink *s, const struct ex_table *t, const struct bs_hdr *rec,
		 const struct event *ev, int event_class, const char *const *cols, int ncols)
{
	const struct bs_ucall *u = (const void *)rec;
	struct ex_value v[EX_MAX_COLS];
	int n = 0;

	if (!ex_wants(s, EX_TABLES) || !ev || !ev->name || ncols + 8 > EX_MAX_COLS)
		return 0;
	v[n++] = EX_V_INT(ev->ts);
	v[n++] = EX_V_INT(ev->ts + ev->dur);
	if (event_class >= 0)
		v[n++] = EX_V_INT(event_class);
	v[n++] = EX_V_INT(ex_gtid(rec->pid, rec->tid));
	v[n++] = EX_V_STRING(ev->name);
	if (event_class >= 0)
		v[n++] = EX_V_INT((__s32)u->ret);
	v[n++] = EX_V_INT(BS_UCALL_DEPTH(u->depth)); /* in flight: returnValue 0 */
	for (int i = 0; i < ncols; i++)
		v[n++] = ex_v_arg(ev, cols[i]);
	v[n++] = EX_V_STACK(ev->stack);
	return ex_row(s, t, EX_ROW_ADD, v, NULL);
}

__s64 ex_gtid(__u32 pid, __u32 tid)
{
	return (__s64)pid << 24 | (tid & 0xffffff); /* a merged file's tid: its namespace is pid */
}

struct ex_value ex_v_arg(const struct event *ev, const char *key)
{
	const struct event_arg *a = ev ? event__arg(ev, key) : NULL;

	return (struct ex_value){ .kind = a ? EX_ARG : EX_NULL, .arg = a };
}

__s64 ex_arg_int(const struct event *ev, const char *key, __s64 dflt)
{
	const struct event_arg *a = event__arg(ev, key);

	if (!a || a->kind == EVENT_ARG_STR)
		return dflt;
	return a->kind == EVENT_ARG_S64 ? a->s : (__s64)a->u;
}

/* Does S render an item of VIEWS (0: every timeline)? */
static int ex_in(const struct ex_sink *s, __u8 views)
{
	return !!(s->views & (views ? views : EX_TIMELINE));
}

int ex_event(struct ex_sink *s, const struct ex_event *e)
{
	return ex_in(s, e->views) && s->ops->event ? s->ops->event(s, e) : 0;
}

int ex_event_styled(struct ex_sink *s, const struct bs_hdr *rec, const struct event *ev)
{
	return ex_event(s, &(struct ex_event){ .rec = rec, .ev = ev });
}

int ex_count(struct ex_sink *s, const struct ex_counter *c, __u64 ts, const struct ex_value *v,
	     __u32 n)
{
	return ex_in(s, c->views) && s->ops->counter ? s->ops->counter(s, c, ts, v, n) : 0;
}

int ex_count1(struct ex_sink *s, const struct ex_counter *c, __u64 ts, const char *key,
	      struct ex_value v)
{
	v.key = key;
	return ex_count(s, c, ts, &v, 1);
}

int ex_track(struct ex_sink *s, const struct ex_track *t, __u64 ts)
{
	return ex_in(s, 0) && s->ops->track ? s->ops->track(s, t, NULL, ts) : 0;
}

int ex_counter_from(struct ex_sink *s, const struct ex_counter *c, __u64 ts)
{
	return ex_in(s, c->views) && s->ops->track ? s->ops->track(s, &c->on, c, ts) : 0;
}

int ex_row(struct ex_sink *s, const struct ex_table *t, int policy, const struct ex_value *v,
	   __s64 *id)
{
	if (id)
		*id = 0;
	return ex_wants(s, EX_TABLES) && s->ops->row ? s->ops->row(s, t, policy, v, id) : 0;
}

int ex_amend_last(struct ex_sink *s, const struct ex_amend *a, const struct ex_value *v)
{
	return ex_wants(s, EX_TABLES) && s->ops->amend ? s->ops->amend(s, a, v) : 0;
}

int ex_fill(struct ex_sink *s, const struct ex_fill *f)
{
	return ex_wants(s, EX_TABLES) && s->ops->fill ? s->ops->fill(s, f) : 0;
}

int ex_next_thread(struct ex_sink *s, size_t *it, __u32 *pid, __u32 *tid)
{
	return s->ops->next_thread ? s->ops->next_thread(s, it, pid, tid) : 0;
}

void ex_rank(struct ex_sink *s, const char *backend, __s32 rank, __s32 nranks)
{
	if (s->ops->rank)
		s->ops->rank(s, backend, rank, nranks);
}

__u64 ex_op_at(struct ex_sink *s, __u32 pid, __u32 tid, __u64 ts)
{
	const struct family_export *x;
	__u64 id = 0;

	if (!ex_wants(s, EX_PROFILER))
		return 0;
	for (int i = 0; i < s->nfam && !id; i++)
		if ((x = families[i]->export) && x->op_at)
			id = x->op_at(s->fst[i], pid, tid, ts);
	return id;
}

void ex_flows(struct ex_sink *s, const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	*out = *in = 0;
	for (int k = 0; k < s->nflowing && !*out && !*in; k++)
		families[s->flowing[k]]->export->flows(rec, out, in);
}

int ex_key(struct ex_sink *s, const char *key, struct ex_value v)
{
	v.key = key;
	return ex_wants(s, EX_ROWS) && s->ops->key ? s->ops->key(s, &v) : 0;
}

int ex_row_id(struct ex_sink *s, __u64 *id)
{
	*id = 0;
	return ex_wants(s, EX_ROWS) && s->ops->row_id ? s->ops->row_id(s, id) : 0;
}

int ex_own_row(struct ex_sink *s, __u32 pid, __u32 tid, const char *kind, const char *name,
	       const struct ex_value *v, __u32 n)
{
	return ex_wants(s, EX_ROWS) && s->ops->own_row
		       ? s->ops->own_row(s, pid, tid, kind, name, v, n)
		       : 0;
}

__u64 ex_bins_origin(struct ex_sink *s, __u64 ts)
{
	if (!s->bins_origin)
		s->bins_origin = s->start_mono ? s->start_mono : ts;
	return s->bins_origin;
}

int ex_recorded(const struct trace_meta *meta, const char *family)
{
	size_t n = strlen(family);

	for (const char *p = meta->families; p && *p; p += strcspn(p, ",") + !!p[strcspn(p, ",")])
		if (strcspn(p, ",") == n && !strncmp(p, family, n))
			return 1;
	return 0;
}

int ex_sink__init(struct ex_sink *s, const struct ex_sink_ops *ops, const struct trace_meta *meta,
		  __u32 views)
{
	s->ops = ops;
	s->views = views;
	s->meta = meta;
	s->start_mono = meta ? meta->start.mono_ns : 0;
	s->nfam = family__count();
	s->fst = calloc(s->nfam + 1, sizeof(*s->fst));
	s->observers = calloc(s->nfam + 1, sizeof(*s->observers));
	s->flowing = calloc(s->nfam + 1, sizeof(*s->flowing));
	if (!s->fst || !s->observers || !s->flowing)
		return -ENOMEM;
	for (int i = 0; i < s->nfam; i++) {
		if (families[i]->export && families[i]->export->observe)
			s->observers[s->nobservers++] = i;
		if (families[i]->export && families[i]->export->flows)
			s->flowing[s->nflowing++] = i;
	}
	return 0;
}

int ex_sink__open_one(struct ex_sink *s, int i)
{
	const struct family_export *x = families[i]->export;

	return x && x->open ? x->open(s, &s->fst[i]) : 0;
}

int ex_sink__observe(struct ex_sink *s, const struct bs_hdr *rec)
{
	int err = 0;

	for (int k = 0, i; !err && k < s->nobservers; k++) {
		i = s->observers[k];
		err = families[i]->export->observe(s, s->fst[i], rec);
	}
	return err;
}

int ex_sink__record(struct ex_sink *s, int fam, const struct bs_hdr *rec, const struct event *ev)
{
	const struct family_export *x = fam >= 0 ? families[fam]->export : NULL;

	return x && x->record ? x->record(s, s->fst[fam], rec, ev) : 0;
}

int ex_sink__finish_one(struct ex_sink *s, int i)
{
	const struct family_export *x = families[i]->export;

	s->finishing = 1;
	return x && x->finish ? x->finish(s, s->fst[i]) : 0;
}

/* Family I's part of the rows, NULL when it has none. */
static const struct ex_rows *rows_of(int i)
{
	return families[i]->export ? families[i]->export->rows : NULL;
}

int ex_sink__rows_new(struct ex_sink *s)
{
	const struct ex_rows *r;

	s->rst = calloc(s->nfam + 1, sizeof(*s->rst));
	if (!s->rst)
		return -ENOMEM;
	for (int i = 0; i < s->nfam; i++)
		if ((r = rows_of(i)) && r->new && !(s->rst[i] = r->new ()))
			return -ENOMEM;
	return 0;
}

int ex_sink__rows_record(struct ex_sink *s, const struct bs_hdr *rec)
{
	const struct ex_rows *r;
	int err = 0;

	for (int i = 0; !err && i < s->nfam; i++)
		if ((r = rows_of(i)) && r->record)
			err = r->record(s, s->rst[i], rec);
	return err;
}

int ex_sink__rows_end(struct ex_sink *s)
{
	const struct ex_rows *r;
	int err = 0;

	for (int i = 0; !err && i < s->nfam; i++)
		if ((r = rows_of(i)) && r->end)
			err = r->end(s, s->rst[i]);
	return err;
}

void ex_sink__rows_stack(struct ex_sink *s, const struct trace_stack *stack, int kernel)
{
	const struct ex_rows *r;

	for (int i = 0; i < s->nfam; i++)
		if ((r = rows_of(i)) && r->stack)
			r->stack(s, s->rst[i], stack, kernel);
}

void ex_sink__rows_process(struct ex_sink *s, __u32 pid)
{
	const struct ex_rows *r;

	for (int i = 0; i < s->nfam; i++)
		if ((r = rows_of(i)) && r->process)
			r->process(s, s->rst[i], pid);
}

void ex_sink__fini(struct ex_sink *s)
{
	const struct family_export *x;
	const struct ex_rows *r;

	for (int i = 0; s->rst && i < s->nfam; i++)
		if (s->rst[i] && (r = rows_of(i)) && r->free)
			r->free(s->rst[i]);
	free(s->rst);
	s->rst = NULL;
	for (int i = 0; s->fst && i < s->nfam; i++)
		if (s->fst[i] && (x = families[i]->export) && x->free)
			x->free(s->fst[i]);
	free(s->fst);
	free(s->observers);
	free(s->flowing);
	s->fst = NULL;
	s->observers = s->flowing = NULL;
}
