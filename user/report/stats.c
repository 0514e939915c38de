// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One pass over a trace through the selected reports; see stats.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "family_stats.h"
#include "family.h"
#include "getopt_error.h"
#include "human.h"
#include "json.h"
#include "mono_clock.h"
#include "report.h"
#include "stats.h"
#include "stats_asks.h"
#include "steps.h"
#include "table.h"
#include "trace_renumber.h"
#include "trace_walk.h"
#include "verdict.h"
#include "msg.h"

struct stats_report {
	const struct report *rep;
	const struct family *fam;
	void *st;
	struct table *t;
	int selected; /* named by -r, or chosen by default after the pass */
};

struct stats {
	struct stats_report *reps;
	int n;
	unsigned long long lost;
	char loss[256];
	/* The families the losses were of (loss__family_name: static names). */
	const char *loss_fams[TRACE_WALK_LOSSES];
	int nloss_fams;
	struct verdict *verdict;   /* the default selection's */
	struct steps *steps;	   /* every process's steps, for the per-step reports */
	unsigned long long events; /* records that decode to events (what dump prints) */
	int top;		   /* JSON and CSV: at most this many rows of each report */
};

/* Indexed by enum stats_format. */
static const char *const format_names[] = { "table", "json", "csv" };

int stats__parse_format(const char *s, enum stats_format *fmt)
{
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++) {
		if (!strcmp(s, format_names[i])) {
			*fmt = (enum stats_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

void stats__list_formats(char *buf, size_t len)
{
	size_t used = 0;
	int n;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++) {
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", format_names[i]);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += n;
	}
}

void stats__list_reports(char *buf, size_t len)
{
	const struct report *const *rp;
	size_t used = 0;
	int n;

	buf[0] = 0;
	for_each_family(it) {
		for (rp = family__stats(it.f)->reports; rp && *rp; rp++) {
			n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", (*rp)->name);
			if (n < 0 || (size_t)n >= len - used)
				return;
			used += n;
		}
	}
}

void stats__free(struct stats *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		if (s->reps[i].st)
			s->reps[i].rep->free(s->reps[i].st);
		table__free(s->reps[i].t);
	}
	verdict__free(s->verdict);
	steps__free(s->steps);
	free(s->reps);
	free(s);
}

/* Every report of every family, none selected yet. */
static struct stats *stats__new(void)
{
	const struct report *const *rp;
	struct stats *s;
	int n = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	for_each_family(it)
		for (rp = family__stats(it.f)->reports; rp && *rp; rp++)
			n++;
	s->reps = calloc(n + 1, sizeof(*s->reps));
	if (!s->reps) {
		free(s);
		return NULL;
	}
	for_each_family(it) {
		for (rp = family__stats(it.f)->reports; rp && *rp; rp++) {
			s->reps[s->n].rep = *rp;
			s->reps[s->n].fam = it.f;
			s->n++;
		}
	}
	return s;
}

/* The report S offers whose name is closest to NAME (a typo's distance), or NULL. */
static const char *stats__closest_report(const struct stats *s, const char *name)
{
	const char **names = calloc((size_t)s->n + 1, sizeof(*names));
	const char *meant = NULL;

	if (!names)
		return NULL;
	for (int i = 0; i < s->n; i++)
		names[i] = s->reps[i].rep->name;
	meant = getopt_error__closest_word(name, names);
	free(names);
	return meant;
}

/*
 * A flight-recorder dump's options name the trigger that wrote it (trigger="TEXT") and, for a
 * --trigger on an event, that event (trigger_event=TYPE:PID:TID:TS, TYPE in the numbers of the
 * file's format VERSION): the verdict opens with it, as with a dump an operator asked for
 * (trigger="SIGUSR1").
 */
static void stats__dump_trigger(struct verdict *v, const char *options, __u32 version)
{
	const char *t = options ? strstr(options, " trigger=\"") : NULL;
	const char *e = options ? strstr(options, " trigger_event=") : NULL;
	unsigned int type, pid, tid;
	unsigned long long ts;
	char text[160];
	size_t n;

	if (!t)
		return;
	t += strlen(" trigger=\"");
	n = strcspn(t, "\"");
	snprintf(text, sizeof(text), "%.*s", (int)(n < sizeof(text) ? n : sizeof(text) - 1), t);
	if (!strncmp(text, "SIGUSR", 6)) { /* an operator's: no event, the verdict says so */
		verdict__set_trigger(v, text, &(struct bs_hdr){ 0 });
		return;
	}
	if (!e || sscanf(e, " trigger_event=0x%x:%u:%u:%llu", &type, &pid, &tid, &ts) != 4)
		return;
	verdict__set_trigger(v, text,
			     &(struct bs_hdr){ .type = (__u16)trace_renumber__type(version, type),
					       .pid = pid,
					       .tid = tid,
					       .ts = ts });
}

/* Mark the reports named in the comma-separated LIST; -ENOENT after naming a bad one. */
static int stats__select(struct stats *s, const char *list, const char *cmd)
{
	char names[STATS_REPORT_LIST_MAX], *copy, *tok, *save = NULL;
	int i, found, err = 0, named = 0;

	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		named++;
		found = 0;
		tok = (char *)stats_asks__nsys_report(tok);
		for (i = 0; i < s->n; i++) {
			if (!strcmp(s->reps[i].rep->name, tok)) {
				s->reps[i].selected = 1;
				found = 1;
			}
		}
		if (!found) {
			const char *meant = stats__closest_report(s, tok);

			stats__list_reports(names, sizeof(names));
			pr_err("unknown report '%s'%s%s%s%s (reports: %s)\n", tok,
			       stats_asks__nsys_only(tok), meant ? "; did you mean " : "",
			       meant ? meant : "", meant ? "?" : "", names);
			err = -ENOENT;
			break;
		}
	}
	free(copy);
	if (!err && !named) {
		/* `-r ,,,` or `-r ""`: a mistake, not a request for nothing. */
		stats__list_reports(names, sizeof(names));
		pr_err("-r names no report (reports: %s)\n", names);
		err = -ENOENT;
	}
	return err;
}

/* Is NAME an item of the comma-separated LIST? */
static int list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = list; p && *p;) {
		p += strspn(p, ", ");
		if (!strncmp(p, name, n) && (p[n] == 0 || p[n] == ',' || p[n] == ' '))
			return 1;
		p += strcspn(p, ", ");
	}
	return 0;
}

/*
 * Default: the reports of the families the header says were recorded, or that have
 * records in the file (older or hand-made traces); every report if that finds none.
 */
static void stats__select_default(struct stats *s, const struct trace_meta *meta,
				  const int *fam_has_records)
{
	int i, f, any = 0;

	for (i = 0; i < s->n; i++) {
		for (f = 0; families[f] && families[f] != s->reps[i].fam; f++)
			;
		if ((meta && list_has(meta->families, s->reps[i].fam->name)) ||
		    (families[f] && fam_has_records[f])) {
			s->reps[i].selected = 1;
			any = 1;
		}
	}
	if (!any)
		for (i = 0; i < s->n; i++)
			s->reps[i].selected = 1;
}

/* Index in families[] of the family decoding each record type, -1 for none. */
static void stats__type_families(int *fam_of_type)
{
	const struct rec_decoder *d;
	int f;

	for (f = 0; f < BS_REC_TYPE_MAX; f++)
		fam_of_type[f] = -1;
	for_each_family(it)
		for (d = it.f->decode->decoders; d && d->kind; d++)
			if (d->type < BS_REC_TYPE_MAX)
				fam_of_type[d->type] = it.i;
}

static int in_list(const __u32 *v, int n, __u32 x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* --pid, --tid, --comm: is REC of a process (thread) asked for? The recording's own are. */
static int stats__keep(const struct stats_opts *o, const struct bs_hdr *rec,
		       const struct trace_model *m)
{
	const struct bs_fork *f = (const void *)rec;
	__u32 pid = rec->pid, tid = rec->tid;
	const char *name;
	int i;

	if (rec->type == BS_REC_FORK && rec->size >= sizeof(*f)) {
		pid = f->child_pid; /* a new thread's birth is its own */
		tid = f->child_tid;
	}
	if (!pid)
		return 1;
	if (o->npids && !in_list(o->pids, o->npids, pid))
		return 0;
	if (o->ntids && !in_list(o->tids, o->ntids, tid))
		return 0;
	if (!o->ncomms)
		return 1;
	name = trace_model__process_name(m, pid);
	for (i = 0; name && i < o->ncomms; i++)
		if (!strcmp(name, o->comms[i]))
			return 1;
	return 0;
}

/*
 * --group-by ARG: GROUP's key (in its buffer) and N; some report asked (with -r), or any
 * report (without), must take it. 0, or -EINVAL after saying so.
 */
static int stats__check_group(struct stats *s, const char *arg, const char *reports,
			      struct report_ask *group)
{
	const struct report *reps[256];
	char list[512];
	int n = 0, takes = 0;

	if (stats_asks__parse_group(arg, (char *)group->group_by, 32, &group->group_n))
		return -EINVAL;
	for (int i = 0; i < s->n && n < 256; i++) {
		reps[n++] = s->reps[i].rep; /* the list names every report that takes one */
		if (!reports || s->reps[i].selected)
			takes += stats_asks__takes(s->reps[i].rep, group->group_by, group->group_n);
	}
	if (takes)
		return 0;
	stats_asks__list_groups(reps, n, list, sizeof(list));
	pr_err("--group-by %s: no report %stakes it (%s)\n", arg, reports ? "asked " : "", list);
	return -EINVAL;
}

/* GROUP: --group-by's key and N, parsed (key NULL: not asked). */
static int stats__emit(struct stats_report *sr, const struct trace_model *m,
		       const struct trace_meta *meta, const struct stats_opts *o,
		       const struct report_ask *group, const struct steps *steps)
{
	struct report_ask ask = {
		.flags = (o->fmt == STATS_FORMAT_TABLE && o->people ? REPORT_FOR_PEOPLE : 0) |
			 (o->python ? REPORT_PYTHON : 0),
		.peak = o->peak,
		.gpus = meta ? meta->gpus : NULL,
		.steps = steps,
	};
	int err;

	if (group->group_by && stats_asks__takes(sr->rep, group->group_by, group->group_n)) {
		ask.group_by = group->group_by;
		ask.group_n = group->group_n;
	}
	if (sr->rep->emit_for)
		err = sr->rep->emit_for(sr->st, m, &ask, sr->t);
	else
		err = sr->rep->emit(sr->st, m, sr->t);
	if (!err && o->sort && table__col_named(sr->t, o->sort) >= 0)
		err = table__sort(sr->t, o->sort);
	return err;
}

struct stats *stats__collect_opts(const char *path, const struct stats_opts *o, int *status)
{
	int fam_of_type[BS_REC_TYPE_MAX], *fam_has = NULL, nfam, i, ret, err;
	const char *reports = o->reports && *o->reports ? o->reports : NULL;
	const char *cmd = o->cmd ? o->cmd : "stats";
	const struct rec_decoder *dec;
	struct report_ask group = { 0 };
	const struct bs_hdr *rec;
	char group_key[32];
	struct trace_walk w;
	unsigned long long nread = 0;
	struct stats *s;
	int sorted = 0;

	group.group_by = group_key;
	*status = EXIT_READ_FAIL;
	s = stats__new();
	if (!s) {
		pr_info("%s\n", strerror(ENOMEM));
		return NULL;
	}
	s->top = o->top;
	if (reports && stats__select(s, reports, cmd))
		goto err_free;
	if (o->group_by && stats__check_group(s, o->group_by, reports, &group))
		goto err_free;
	if (steps__check(o->steps, "--steps"))
		goto err_free;
	if (trace_walk__open(&w, cmd, path))
		goto err_free;
	w.quiet = o->quiet;
	nfam = family__count();
	fam_has = calloc(nfam + 1, sizeof(*fam_has));
	if (!fam_has)
		goto err_nomem;
	stats__type_families(fam_of_type);
	/* Every report runs: which ones the default shows is only known after the pass. */
	for (i = 0; i < s->n; i++) {
		s->reps[i].st = s->reps[i].rep->new ();
		if (!s->reps[i].st)
			goto err_nomem;
	}
	if (!reports && !(s->verdict = verdict__new(w.m, trace_walk__meta(&w)->families)))
		goto err_nomem;
	if (s->verdict)
		stats__dump_trigger(s->verdict, trace_walk__meta(&w)->options,
				    trace_walk__meta(&w)->version);
	if (!(s->steps = steps__new(o->steps)))
		goto err_nomem;

	while ((ret = trace_walk__next(&w, &rec, &dec))) {
		/* The clock every 4,096 records: a few us beside reading them */
		if (o->deadline_ns && !(++nread & 4095) && mono_now_ns() > o->deadline_ns) {
			trace_walk__close(&w);
			free(fam_has);
			stats__free(s);
			*status = -ETIME;
			return NULL;
		}
		if (ret != 1 || !stats__keep(o, rec, w.m))
			continue;
		if (fam_of_type[rec->type] >= 0)
			fam_has[fam_of_type[rec->type]] = 1;
		if (dec && dec->decode != family__decode_meta)
			s->events++;
		steps__add(s->steps, rec, w.m);
		for (i = 0; i < s->n; i++)
			s->reps[i].rep->add(s->reps[i].st, rec, w.m);
		if (s->verdict)
			verdict__observe(s->verdict, rec);
	}
	*status = trace_walk__finish(&w);
	if (!reports)
		stats__select_default(s, trace_walk__meta(&w), fam_has);
	if (steps__finish(s->steps))
		goto err_nomem;

	for (i = 0; i < s->n; i++) {
		if (!s->reps[i].selected)
			continue;
		s->reps[i].t = table__new(s->reps[i].rep->name);
		if (!s->reps[i].t)
			goto err_nomem;
		table__set_origin(s->reps[i].t, trace_model__start(w.m));
		err = stats__emit(&s->reps[i], w.m, trace_walk__meta(&w), o, &group, s->steps);
		if (err) {
			pr_err("%s: report %s failed: %s\n", path, s->reps[i].rep->name,
			       strerror(-err));
			goto err_close;
		}
		sorted += o->sort && table__col_named(s->reps[i].t, o->sort) >= 0;
	}
	if (o->sort && !sorted) {
		pr_err("--sort %s: no report printed has that column (a column's title or the key "
		       "--format json prints)\n",
		       o->sort);
		goto err_close;
	}
	for (i = 0; s->verdict && i < s->n; i++)
		verdict__set_report(s->verdict, s->reps[i].rep->name, s->reps[i].t, s->reps[i].st);
	if (s->verdict)
		verdict__judge(s->verdict); /* while the model still names threads */
	s->lost = w.lost_total;
	trace_walk__loss_summary(&w, s->loss, sizeof(s->loss));
	for (i = 0; i < w.nlost_by; i++)
		s->loss_fams[s->nloss_fams++] = w.lost_by[i].family;
	trace_walk__close(&w);
	free(fam_has);
	return s;

err_nomem:
	pr_err("%s: %s\n", path, strerror(ENOMEM));
err_close:
	*status = EXIT_READ_FAIL;
	trace_walk__close(&w);
err_free:
	free(fam_has);
	stats__free(s);
	return NULL;
}

struct stats *stats__collect(const char *path, const char *reports, int *status)
{
	struct stats_opts o = { .reports = reports };

	return stats__collect_opts(path, &o, status);
}

unsigned long long stats__events(const struct stats *s)
{
	return s->events;
}

const struct verdict *stats__verdict(const struct stats *s)
{
	return s->verdict;
}

const struct steps *stats__steps(const struct stats *s)
{
	return s->steps;
}

const struct table *stats__table(const struct stats *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->reps[i].t && !strcmp(s->reps[i].rep->name, name))
			return s->reps[i].t;
	return NULL;
}

unsigned long long stats__lost(const struct stats *s)
{
	return s->lost;
}

/* Table mode: the reports in the order printed: the verdict's citations first. */
static void print_order(const struct stats *s, int all, int *order)
{
	const char *cited[64];
	int i, k, n = 0, ncited = 0;
	char *done = calloc(s->n + 1, 1);

	if (all && s->verdict)
		ncited = verdict__cited(s->verdict, cited, 64);
	for (k = 0; done && k < ncited; k++) {
		size_t len = strcspn(cited[k], " ");

		for (i = 0; i < s->n; i++)
			if (!done[i] && s->reps[i].t && strlen(s->reps[i].rep->name) == len &&
			    !strncmp(s->reps[i].rep->name, cited[k], len)) {
				order[n++] = i;
				done[i] = 1;
			}
	}
	for (i = 0; i < s->n; i++)
		if (!done || !done[i])
			order[n++] = i;
	free(done);
}

static void print_table(const struct stats_report *sr, int first, const struct table_view *view,
			FILE *out)
{
	char head[512], cut[512];
	int width = view && !view->wide ? view->width : 0;

	snprintf(head, sizeof(head), "** %s (%s):", sr->rep->desc, sr->rep->name);
	fprintf(out, "%s%s\n\n", first ? "" : "\n",
		width ? human__elide(head, width, cut, sizeof(cut)) : head);
	if (!table__nrows(sr->t) && !table__nnotes(sr->t)) {
		fprintf(out, " no %s data in this trace\n", sr->rep->name);
	} else if (!table__nrows(sr->t)) {
		/* why a report with data has no row to show (mem_peak: nothing sampled at it) */
		for (int i = 0; i < table__nnotes(sr->t); i++) {
			fputs(" ", out);
			human__wrap(out, table__get_note(sr->t, i), width ? width : 100, 1, 1);
		}
	} else if (view)
		table__print_view(sr->t, view, out);
	else
		table__print(sr->t, out);
}

/* The default selection's reports without rows, named in one line at the end. */
static void print_empty(const struct stats *s, int first, int width, FILE *out)
{
	char line[2048];
	size_t used;
	int i, n = 0;

	used = snprintf(line, sizeof(line), "no data in this trace for:");
	for (i = 0; i < s->n && used < sizeof(line); i++) {
		if (!s->reps[i].t || table__nrows(s->reps[i].t))
			continue;
		used += snprintf(line + used, sizeof(line) - used, "%s %s", n++ ? "," : "",
				 s->reps[i].rep->name);
	}
	if (!n)
		return;
	if (!first)
		fputc('\n', out);
	human__wrap(out, line, width, 0, 2);
}

void stats__print(const struct stats *s, enum stats_format fmt, int all,
		  const struct table_view *view, FILE *out)
{
	int i, first = 1, *order = calloc(s->n + 1, sizeof(*order));
	int width = view && !view->wide ? view->width : 0;
	const struct stats_report *sr;
	struct json j;

	if (!order)
		return;
	print_order(s, fmt == STATS_FORMAT_TABLE && all, order);
	if (fmt == STATS_FORMAT_JSON) {
		json__init(&j, out, 1);
		json__begin_object(&j);
		json__key(&j, "reports");
		json__begin_object(&j);
	}
	if (fmt == STATS_FORMAT_TABLE && all && s->verdict) {
		verdict__print(s->verdict, width, out);
		first = 0;
	}
	for (i = 0; i < s->n; i++) {
		sr = &s->reps[order[i]];
		if (!sr->t)
			continue;
		switch (fmt) {
		case STATS_FORMAT_JSON:
			json__key(&j, sr->rep->name);
			table__print_json_rows(sr->t, &j, s->top);
			break;
		case STATS_FORMAT_CSV:
			fprintf(out, "%s# %s\n", first ? "" : "\n", sr->rep->name);
			table__print_csv_rows(sr->t, out, s->top);
			break;
		case STATS_FORMAT_TABLE:
			if (all && !table__nrows(sr->t))
				continue; /* listed once at the end: every family has reports */
			print_table(sr, first, view, out);
			break;
		}
		first = 0;
	}
	if (fmt == STATS_FORMAT_TABLE && all)
		print_empty(s, first, width, out);
	if (fmt == STATS_FORMAT_JSON) {
		json__end_object(&j);
		json__end_object(&j);
	}
	free(order);
}

int stats__verdict_line(const char *path, __u64 by_ns, char *buf, size_t len)
{
	struct stats_opts o = { .cmd = "record", .quiet = 1, .deadline_ns = by_ns };
	struct stats *s;
	struct stat st;
	int status;

	buf[0] = 0;
	if (stat(path, &st))
		return -errno;
	if ((unsigned long long)st.st_size > STATS_VERDICT_MAX_BYTES)
		return -EFBIG;
	if (mono_now_ns() >= by_ns)
		return -ETIME;
	s = stats__collect_opts(path, &o, &status);
	if (!s)
		return status == -ETIME ? -ETIME : -EIO;
	verdict__headline(s->verdict, buf, len);
	stats__free(s);
	return 0;
}

/*
 * Whether the losses can touch a report of SR's family: its own family's, one of no family
 * ("all": the writer's; "unknown"), or the always-on family's (every report names processes
 * by it: family__always). A report of no family reads several: touched by any.
 */
static int loss_touches(const struct stats *s, const struct stats_report *sr)
{
	const struct family *always = family__always();

	if (!sr->fam)
		return 1;
	for (int i = 0; i < s->nloss_fams; i++)
		if (!strcmp(s->loss_fams[i], sr->fam->name) || !strcmp(s->loss_fams[i], "all") ||
		    !strcmp(s->loss_fams[i], "unknown") ||
		    (always && !strcmp(s->loss_fams[i], always->name)))
			return 1;
	return 0;
}

/* The reports printed that the losses touch, named into BUF; how many. */
static int touched_reports(const struct stats *s, char *buf, size_t len)
{
	size_t used = 0;
	int n = 0, k;

	buf[0] = 0;
	for (int i = 0; i < s->n; i++) {
		if (!s->reps[i].selected || !loss_touches(s, &s->reps[i]))
			continue;
		k = snprintf(buf + used, len - used, "%s%s", n ? ", " : "", s->reps[i].rep->name);
		if (k > 0 && (size_t)k < len - used)
			used += (size_t)k;
		n++;
	}
	return n;
}

int stats__run_opts(const char *path, const struct stats_opts *o, FILE *out)
{
	const struct table_view *view = o->fmt == STATS_FORMAT_TABLE ? &o->view : NULL;
	int status, width = view && !view->wide ? view->width : 0;
	struct stats *s;
	char warn[1024], names[512];
	int touched;

	s = stats__collect_opts(path, o, &status);
	if (!s)
		return status;
	/*
	 * Loss is never silent; JSON and CSV stay parseable, so it goes to stderr there. Above
	 * the tables only when it touches one of them, naming those; else a note (the events
	 * lost were of families these reports do not read).
	 */
	touched = s->lost ? touched_reports(s, names, sizeof(names)) : 0;
	if (touched && o->fmt == STATS_FORMAT_TABLE) {
		snprintf(warn, sizeof(warn),
			 "WARNING: %llu events were lost while recording (%s): %s below "
			 "undercount%s.",
			 s->lost, s->loss, names, touched > 1 ? "" : "s");
		human__wrap(out, warn, width, 0, 2);
		fputc('\n', out);
	} else if (touched) {
		pr_warn("%s: %llu events were lost while recording (%s): %s undercount%s\n", path,
			s->lost, s->loss, names, touched > 1 ? "" : "s");
	} else if (s->lost) {
		pr_note("%s: %llu events were lost while recording (%s); the reports shown do "
			"not read them\n",
			path, s->lost, s->loss);
	}
	stats__print(s, o->fmt, !o->reports || !*o->reports, view, out);
	if (fflush(out) || ferror(out)) {
		pr_err("writing the output failed: %s\n", strerror(errno));
		status = EXIT_READ_FAIL;
	}
	stats__free(s);
	return status;
}

int stats__run(const char *path, const char *reports, enum stats_format fmt, FILE *out)
{
	struct stats_opts o = { .reports = reports, .fmt = fmt, .view = { .raw = 1 } };

	return stats__run_opts(path, &o, out);
}
