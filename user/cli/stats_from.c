// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats --from: each report's SQL run in the server (ch_reports.h), its answer's rows into a
 * stats table (table.h), printed as stats prints a file's (the same keys, JSON and CSV).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ch_http.h"
#include "bpfsight_version.h"
#include "ch_reports.h"
#include "ch_tsv.h"
#include "ch_verdict.h"
#include "json.h"
#include "msg.h"
#include "report_html.h"
#include "stats_from.h"
#include "table.h"
#include "verdict.h"
#include "verdict_from.h"

/* Is field C of every row of ANS NULL (\N)? */
static int ch_all_null(const char *ans, int c)
{
	for (const char *p = ans; *p;) {
		for (int i = 0; i < c && *p && *p != '\n'; i++)
			p += strcspn(p, "\t\n") + (p[strcspn(p, "\t\n")] == '\t');
		if (strncmp(p, "\\N", 2) || (p[2] && p[2] != '\t' && p[2] != '\n'))
			return 0;
		p += strcspn(p, "\n");
		p += *p == '\n';
	}
	return 1;
}

/* The answer ANS to report R into T: its columns (an optional one NULL in every row left
 * out), its rows. */
static int ch_fill(struct table *t, const struct ch_report *r, char *ans)
{
	struct table_col tc = {};
	int ncols = 0, col[64], n = 0;

	for (const struct ch_col *c = r->cols; c->key && ncols < 64; c++, ncols++) {
		col[ncols] = c->optional && ch_all_null(ans, ncols) ? -1 : n++;
		if (col[ncols] < 0)
			continue;
		tc.key = c->key;
		tc.title = c->title;
		tc.type = c->type == 'u'   ? TABLE_U64
			  : c->type == 's' ? TABLE_S64
			  : c->type == 'd' ? TABLE_DOUBLE
					   : TABLE_STR;
		table__add_col(t, &tc);
	}
	for (char *p = ans; *p;) {
		table__row(t);
		for (int c = 0; c < ncols; c++) {
			/* NULL, a value the report leaves unset */
			int null = !strncmp(p, "\\N", 2) && (!p[2] || p[2] == '\t' || p[2] == '\n');
			char *v = ch_tsv__field(p, &p);

			if (null || col[c] < 0)
				continue;
			switch (r->cols[c].type) {
			case 'u':
				table__set_u64(t, col[c], strtoull(v, NULL, 10));
				break;
			case 's':
				table__set_s64(t, col[c], strtoll(v, NULL, 10));
				break;
			case 'd':
				table__set_double(t, col[c], strtod(v, NULL));
				break;
			default:
				table__set_str(t, col[c], v);
			}
		}
	}
	return table__err(t);
}

int stats_from__table(struct ch_server *s, const struct ch_report *r, const char *where,
		      const char *job, const char *files, struct table *t)
{
	char *sql = ch_report__sql(r, where, job, files), *ans = NULL;
	int err = sql ? ch_server__run(s, sql, NULL, 0, &ans) : -ENOMEM;

	err = err ?: ch_fill(t, r, ans);
	free(sql);
	free(ans);
	return err;
}

int stats_from__no_rows(const struct ch_report *r, struct table *t)
{
	char none[1] = "";

	return ch_fill(t, r, none);
}

const char *stats_from__files(struct ch_server *s, const char *where, const char *job, char *buf,
			      size_t len)
{
	struct table *t = table__new(ch_file_order.name);
	const char *got = NULL;

	if (t && !stats_from__table(s, &ch_file_order, where, job, NULL, t) && table__nrows(t) &&
	    table__get_str(t, 0, 0) && strlen(table__get_str(t, 0, 0)) < len)
		got = strcpy(buf, table__get_str(t, 0, 0));
	table__free(t);
	return got;
}

/* The rows' filter: the job, and the host, rank and file asked. */
static int ch_where(const struct stats_from *f, const char *job, char *buf, size_t len)
{
	int n = snprintf(buf, len, "job = '%s'", job);

	if (strpbrk(job, "'\\"))
		return -EINVAL;
	for (const char *s = f->host; s; s = NULL)
		if (strpbrk(s, "'\\"))
			return -EINVAL;
	for (const char *s = f->file; s; s = NULL)
		if (strpbrk(s, "'\\"))
			return -EINVAL;
	if (f->host)
		n += snprintf(buf + n, len - n, " AND host = '%s'", f->host);
	if (f->rank >= -1)
		n += snprintf(buf + n, len - n, " AND rank = %d", f->rank);
	if (f->file)
		n += snprintf(buf + n, len - n, " AND file = '%s'", f->file);
	return n < (int)len ? 0 : -E2BIG;
}

static void ch_print(const struct table *t, const char *name, enum stats_format fmt, int first,
		     struct json *j, FILE *out)
{
	switch (fmt) {
	case STATS_FORMAT_JSON:
		json__key(j, name);
		table__print_json_rows(t, j, 0);
		break;
	case STATS_FORMAT_CSV:
		fprintf(out, "%s# %s\n", first ? "" : "\n", name);
		table__print_csv_rows(t, out, 0);
		break;
	case STATS_FORMAT_TABLE:
		fprintf(out, "%s%s (computed in ClickHouse)\n\n", first ? "" : "\n", name);
		if (table__nrows(t))
			table__print(t, out);
		else
			fprintf(out, " no %s data in this job\n", name);
		break;
	}
}

static int ch_status(int err)
{
	if (ch_server__retryable(err))
		return 2;
	return err == -EACCES ? 4 : 6;
}

/*
 * F's server into S, its release asked (a server older than the oldest tested refused; -v
 * says it), its rows' filters into WHERE and JOB: 0, or the exit status (said).
 */
static int ch_open(const struct stats_from *f, struct ch_server *s, char *where, size_t wlen,
		   char *job, size_t jlen)
{
	int err;

	if (ch_server__parse(s, f->url))
		return 1;
	if (!*s->job || ch_where(f, s->job, where, wlen)) {
		pr_err("%s: which job? --from clickhouse://HOST:PORT/JOB (and no quotes in --host, "
		       "--file)\n",
		       f->url);
		return 1;
	}
	snprintf(job, jlen, "job = '%s'", s->job);
	s->verbose = f->verbose;
	err = ch_version__ask(s);
	if (err)
		pr_err("%s\n", s->error);
	return err ? ch_status(err) : 0;
}

int stats_from__folded(const struct stats_from *f, int offcpu, FILE *out)
{
	char where[1024], job[300], *sql, *ans = NULL, *p;
	struct ch_server s;
	int err, n = 0;

	err = ch_open(f, &s, where, sizeof(where), job, sizeof(job));
	if (err)
		return err;
	/* the cpu family's and the sched family's (their struct family.sql) */
	sql = ch_report__sql(ch_report__named(offcpu ? "folded-offcpu" : "folded"), where, job,
			     NULL);
	err = sql ? ch_server__run(&s, sql, NULL, 0, &ans) : -ENOMEM;
	free(sql);
	if (err) {
		pr_err("%s\n", err == -ENOMEM ? "out of memory" : s.error);
		return err == -ENOMEM ? 1 : ch_status(err);
	}
	for (p = ans; *p; n++) {
		char *text = ch_tsv__field(p, &p), *count = ch_tsv__field(p, &p);

		fprintf(out, "%s %s\n", text, count);
	}
	free(ans);
	if (!n)
		pr_err("%s: %s\n", f->url,
		       offcpu ? "no off-CPU intervals with a stack in these rows (record with -t "
				"sched --stacks=sched)"
			      : "no CPU samples in these rows (record with -t cpu)");
	return n ? 0 : 1;
}

/* The report nccl_stragglers' sentences read (stragglers_from.c). */
#define RANK_SUM "nccl_rank_sum"

/* The verdict's nccl_rank_sum when it asked for it (VF may be NULL): the notes read it too. */
static const struct table *rank_sum(const struct verdict_from *vf)
{
	return vf ? verdict__table(verdict_from__verdict(vf), RANK_SUM) : NULL;
}

/* Report R into T: asked, or, where the events per kind HAVE (NULL: not known) hold none it
 * needs (struct ch_report.needs), its empty table without the query's cost. */
static int report(struct ch_server *s, const struct ch_report *r, const struct table *have,
		  const char *where, const char *job, const char *files, struct table *t)
{
	if (have && r->needs && !verdict_from__kinds_have(have, r->needs))
		return stats_from__no_rows(r, t);
	return stats_from__table(s, r, where, job, files, t);
}

/* nccl_rank_sum for nccl_stragglers' sentences into *RSUM (report's). */
static int ask_rank_sum(struct ch_server *s, const struct table *have, const char *where,
			const char *job, const char *files, struct table **rsum)
{
	const struct ch_report *r = ch_report__find(RANK_SUM);

	*rsum = r ? table__new(RANK_SUM) : NULL;
	return *rsum ? report(s, r, have, where, job, files, *rsum) : r ? -ENOMEM : -ENOENT;
}

/* How many reports of LIST ("a,b") are made of some kinds of row only (struct ch_report.needs). */
static int needing(const char *list)
{
	char name[64];
	int n = 0;

	for (const char *p = list; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		const struct ch_report *r;

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, ","), p);
		r = ch_report__find(name);
		n += r && r->needs;
	}
	return n;
}

int stats_from__run(const struct stats_from *f, FILE *out)
{
	char *list = strdup(f->reports ? f->reports : ""), *tok, *save = NULL, where[1024];
	char job[300], fbuf[65536];
	const char *files;
	const struct ch_report *r;
	struct verdict_from *vf = NULL;
	struct table *rsum = NULL;  /* nccl_rank_sum, when asked for nccl_stragglers' sentences */
	struct table *kinds = NULL; /* the events per kind, without a verdict (it asks them) */
	const struct table *have;
	struct ch_server s;
	int status = 0, first = 1, err;
	struct json j;

	status = list ? ch_open(f, &s, where, sizeof(where), job, sizeof(job)) : 1;
	if (status) {
		free(list);
		return status;
	}
	/* every name first: a typo costs no query */
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!ch_report__find(tok)) {
			char there[512];
			size_t n = 0;
			const struct ch_report *c;
			size_t it = 0;

			there[0] = 0;
			while ((c = ch_report__next(&it)) && n < sizeof(there))
				n += snprintf(there + n, sizeof(there) - n, "%s%s", n ? ", " : "",
					      c->name);
			pr_err("report '%s' is not computed in ClickHouse (there: %s; "
			       "docs/CLICKHOUSE.md)\n",
			       tok, there);
			free(list);
			return 1;
		}
	}
	free(list);
	list = strdup(f->reports
			      ? f->reports
			      : "cuda_api_sum,nccl_sum,nccl_stragglers,osrt_sum,sched_sum,gil_sum,"
				"ranks,nccl_rank_sum,rank_waits");
	if (f->fmt == STATS_FORMAT_JSON) {
		json__init(&j, out, 1);
		json__begin_object(&j);
		json__key(&j, "reports");
		json__begin_object(&j);
	}
	/* Loss is never silent: stats FILE's warning, above everything (table format). */
	files = stats_from__files(&s, where, job, fbuf, sizeof(fbuf));
	err = stats_from__losses(&s, f, where, job, files, list ? list : "", out);
	if (err) {
		pr_err("the events lost: %s\n", err == -ENOMEM ? "out of memory" : s.error);
		free(list);
		return err == -ENOMEM ? 1 : ch_status(err);
	}
	/*
	 * Without -r, the verdict first, as stats FILE opens with it (table format only); kept
	 * for the reports below: those it asked the server for are printed from its answers,
	 * not asked again (the same query on the same rows).
	 */
	if (!f->reports && f->fmt == STATS_FORMAT_TABLE) {
		vf = verdict_from__judge(&s, f->url, where, job, files, &err);
		if (!vf) {
			pr_err("the verdict: %s\n", err == -ENOMEM ? "out of memory" : s.error);
			free(list);
			return err == -ENOMEM ? 1 : ch_status(err);
		}
		verdict__print(verdict_from__verdict(vf), f->width, out);
		first = 0;
	}
	/*
	 * Without it, the events per kind asked once where two reports or more are made of some
	 * kinds only: those over none are not asked (18.16 analyses each query's nesting, some
	 * 0.01-0.1 s of CPU over no row). Not answered: every report asked, as before, its error
	 * said there.
	 */
	if (!vf && list && needing(list) > 1) {
		kinds = table__new(ch_verdict_kinds.name);
		if (kinds && stats_from__table(&s, &ch_verdict_kinds, where, job, files, kinds)) {
			table__free(kinds);
			kinds = NULL;
		}
	}
	have = vf ? verdict_from__kinds(vf) : kinds;
	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct table *t = table__new(tok);
		const struct table *asked = NULL;
		int stragglers;

		r = ch_report__find(tok);
		stragglers = r && r == ch_report__find("nccl_stragglers");
		/* nccl_stragglers gets its sentences added below: its own table */
		if (vf && !stragglers)
			asked = verdict__table(verdict_from__verdict(vf), tok);
		if (!asked && r && r == ch_report__find(RANK_SUM))
			asked = rsum; /* asked for nccl_stragglers' sentences */
		if (!t || asked)
			err = t ? 0 : -ENOMEM;
		else
			err = report(&s, r, have, where, job, files, t);
		if (!err && stragglers && f->fmt == STATS_FORMAT_TABLE) {
			/* its sentences read nccl_rank_sum: asked once, kept for its report */
			if (!rank_sum(vf) && !rsum)
				err = ask_rank_sum(&s, have, where, job, files, &rsum);
			if (!err)
				err = stats_from__straggler_notes(&s, where, job, files, t,
								  rank_sum(vf) ?: rsum);
		}
		if (!err)
			ch_print(asked ?: t, tok, f->fmt, first, &j, out);
		else if (err == -ENOMEM)
			pr_err("%s: out of memory\n", tok);
		else
			pr_err("%s: %s\n", tok, s.error);
		status = err ? (err == -ENOMEM ? 1 : ch_status(err)) : status;
		first = 0;
		table__free(t);
		if (err)
			break;
	}
	if (f->fmt == STATS_FORMAT_JSON) {
		json__end_object(&j);
		json__end_object(&j);
		fputc('\n', out);
	}
	free(list);
	table__free(rsum);
	table__free(kinds);
	verdict_from__free(vf);
	return status;
}

#define PAGE_REPORTS 16

/* The events-lost warning of the page (stats --from's sentence), NULL when none was lost. */
static const char *loss_warning(const struct stats_from_loss *l, char *buf, size_t len)
{
	if (!l->lost)
		return NULL;
	if (l->touched)
		snprintf(buf, len,
			 "WARNING: %llu events were lost while recording (%s): %s below "
			 "undercount%s.",
			 l->lost, l->causes, l->reports, l->touched > 1 ? "" : "s");
	else
		snprintf(buf, len,
			 "%llu events were lost while recording (%s); the reports below do not "
			 "read them.",
			 l->lost, l->causes);
	return buf;
}

int stats_from__page(const struct stats_from *f, FILE *out)
{
	char where[1024], job[300], fbuf[65536], list[1024] = "", warn[1280];
	const struct ch_report *r;
	size_t it = 0;
	struct stats_from_loss loss;
	struct table *own[PAGE_REPORTS], *rsum = NULL;
	const struct table *t[PAGE_REPORTS]; /* own's, or the verdict's answers */
	size_t used = 0;
	const char *files;
	struct verdict_from *vf;
	struct ch_server s;
	int n = 0, err;

	err = ch_open(f, &s, where, sizeof(where), job, sizeof(job));
	if (err)
		return err;
	files = stats_from__files(&s, where, job, fbuf, sizeof(fbuf));
	vf = verdict_from__judge(&s, f->url, where, job, files, &err);
	for (r = ch_report__next(&it); vf && r && n < PAGE_REPORTS && !err;
	     r = ch_report__next(&it)) {
		int stragglers = r == ch_report__find("nccl_stragglers");

		/* what the verdict asked for is not asked again (but the table notes are added to) */
		t[n] = stragglers ? NULL : verdict__table(verdict_from__verdict(vf), r->name);
		if (!t[n] && r == ch_report__find(RANK_SUM))
			t[n] = rsum; /* asked for nccl_stragglers' sentences */
		own[n] = t[n] ? NULL : table__new(r->name);
		/* a report over rows it needs none of: its empty table, not its query's cost */
		if (t[n])
			err = 0;
		else
			err = own[n] ? report(&s, r, verdict_from__kinds(vf), where, job, files,
					      own[n])
				     : -ENOMEM;
		t[n] = t[n] ?: own[n];
		/* its sentences, as stats --from prints them under it, from nccl_rank_sum asked once */
		if (!err && stragglers && !rank_sum(vf))
			err = ask_rank_sum(&s, verdict_from__kinds(vf), where, job, files, &rsum);
		if (!err && stragglers)
			err = stats_from__straggler_notes(&s, where, job, files, own[n],
							  rank_sum(vf) ?: rsum);
		if (t[n])
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 used ? "," : "", r->name);
		n += t[n] != NULL;
	}
	if (vf && !err)
		err = stats_from__loss_said(&s, where, job, files, list, &loss);
	if (vf && !err) {
		struct report_from_input in = { f->url,
						BPFSIGHT_VERSION,
						verdict_from__verdict(vf),
						t,
						n,
						loss_warning(&loss, warn, sizeof(warn)) };

		err = report_html__write_from(&in, out);
	}
	if (err)
		pr_err("%s\n", err == -ENOMEM ? "out of memory"
			       : err == -EIO  ? "writing the page failed"
					      : s.error);
	verdict_from__free(vf);
	while (n)
		table__free(own[--n]);
	table__free(rsum);
	return !err ? 0 : err == -ENOMEM || err == -EIO ? 1 : ch_status(err);
}
