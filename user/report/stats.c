// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* One pass over a trace through the selected reports; see stats.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"
#include "family.h"
#include "json.h"
#include "report.h"
#include "stats.h"
#include "table.h"
#include "trace_walk.h"

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
	int i, n;

	buf[0] = 0;
	for (i = 0; families[i]; i++) {
		for (rp = families[i]->reports; rp && *rp; rp++) {
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
	free(s->reps);
	free(s);
}

/* Every report of every family, none selected yet. */
static struct stats *stats__new(void)
{
	const struct report *const *rp;
	struct stats *s;
	int i, n = 0;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	for (i = 0; families[i]; i++)
		for (rp = families[i]->reports; rp && *rp; rp++)
			n++;
	s->reps = calloc(n + 1, sizeof(*s->reps));
	if (!s->reps) {
		free(s);
		return NULL;
	}
	for (i = 0; families[i]; i++) {
		for (rp = families[i]->reports; rp && *rp; rp++) {
			s->reps[s->n].rep = *rp;
			s->reps[s->n].fam = families[i];
			s->n++;
		}
	}
	return s;
}

/* Mark the reports named in the comma-separated LIST; -ENOENT after naming a bad one. */
static int stats__select(struct stats *s, const char *list)
{
	char names[512], *copy, *tok, *save = NULL;
	int i, found, err = 0, named = 0;

	copy = strdup(list);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		named++;
		found = 0;
		for (i = 0; i < s->n; i++) {
			if (!strcmp(s->reps[i].rep->name, tok)) {
				s->reps[i].selected = 1;
				found = 1;
			}
		}
		if (!found) {
			stats__list_reports(names, sizeof(names));
			fprintf(stderr, "bpfsight stats: unknown report '%s' (reports: %s)\n", tok,
				names);
			err = -ENOENT;
			break;
		}
	}
	free(copy);
	if (!err && !named) {
		/* `-r ,,,` or `-r ""`: a mistake, not a request for nothing. */
		stats__list_reports(names, sizeof(names));
		fprintf(stderr, "bpfsight stats: -r names no report (reports: %s)\n", names);
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
	for (f = 0; families[f]; f++)
		for (d = families[f]->decoders; d && d->kind; d++)
			if (d->type < BS_REC_TYPE_MAX)
				fam_of_type[d->type] = f;
}

struct stats *stats__collect(const char *path, const char *reports, int *status)
{
	int fam_of_type[BS_REC_TYPE_MAX], *fam_has = NULL, nfam, i, ret, err;
	const struct rec_decoder *dec;
	const struct bs_hdr *rec;
	struct trace_walk w;
	struct stats *s;

	*status = EXIT_READ_FAIL;
	s = stats__new();
	if (!s) {
		fprintf(stderr, "bpfsight stats: %s\n", strerror(ENOMEM));
		return NULL;
	}
	if (reports && *reports && stats__select(s, reports))
		goto err_free;
	if (trace_walk__open(&w, "stats", path))
		goto err_free;
	for (nfam = 0; families[nfam]; nfam++)
		;
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

	while ((ret = trace_walk__next(&w, &rec, &dec))) {
		if (ret != 1)
			continue;
		if (fam_of_type[rec->type] >= 0)
			fam_has[fam_of_type[rec->type]] = 1;
		for (i = 0; i < s->n; i++)
			s->reps[i].rep->add(s->reps[i].st, rec, w.m);
	}
	*status = trace_walk__finish(&w);
	if (!reports || !*reports)
		stats__select_default(s, trace_walk__meta(&w), fam_has);

	for (i = 0; i < s->n; i++) {
		if (!s->reps[i].selected)
			continue;
		s->reps[i].t = table__new(s->reps[i].rep->name);
		if (!s->reps[i].t)
			goto err_nomem;
		err = s->reps[i].rep->emit(s->reps[i].st, w.m, s->reps[i].t);
		if (err) {
			fprintf(stderr, "bpfsight stats: %s: report %s failed: %s\n", path,
				s->reps[i].rep->name, strerror(-err));
			goto err_close;
		}
	}
	s->lost = w.lost_total;
	trace_walk__loss_summary(&w, s->loss, sizeof(s->loss));
	trace_walk__close(&w);
	free(fam_has);
	return s;

err_nomem:
	fprintf(stderr, "bpfsight stats: %s: %s\n", path, strerror(ENOMEM));
err_close:
	*status = EXIT_READ_FAIL;
	trace_walk__close(&w);
err_free:
	free(fam_has);
	stats__free(s);
	return NULL;
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

void stats__print(const struct stats *s, enum stats_format fmt, int all, FILE *out)
{
	const struct stats_report *sr;
	struct json j;
	int i, first = 1, nempty = 0;

	if (fmt == STATS_FORMAT_JSON) {
		json__init(&j, out, 1);
		json__begin_object(&j);
		json__key(&j, "reports");
		json__begin_object(&j);
	}
	for (i = 0; i < s->n; i++) {
		sr = &s->reps[i];
		if (!sr->t)
			continue;
		switch (fmt) {
		case STATS_FORMAT_JSON:
			json__key(&j, sr->rep->name);
			table__print_json(sr->t, &j);
			break;
		case STATS_FORMAT_CSV:
			fprintf(out, "%s# %s\n", first ? "" : "\n", sr->rep->name);
			table__print_csv(sr->t, out);
			break;
		case STATS_FORMAT_TABLE:
			if (all && !table__nrows(sr->t)) {
				nempty++; /* listed once at the end: every family has reports */
				continue;
			}
			fprintf(out, "%s** %s (%s):\n\n", first ? "" : "\n", sr->rep->desc,
				sr->rep->name);
			if (table__nrows(sr->t))
				table__print(sr->t, out);
			else
				fprintf(out, " no %s data in this trace\n", sr->rep->name);
			break;
		}
		first = 0;
	}
	for (i = 0; fmt == STATS_FORMAT_TABLE && nempty && i < s->n; i++) {
		sr = &s->reps[i];
		if (!sr->t || table__nrows(sr->t))
			continue;
		fprintf(out, "%s%s", first ? "\nno data in this trace for: " : ", ", sr->rep->name);
		first = 0;
	}
	if (fmt == STATS_FORMAT_TABLE && nempty)
		fputc('\n', out);
	if (fmt == STATS_FORMAT_JSON) {
		json__end_object(&j);
		json__end_object(&j);
	}
}

int stats__run(const char *path, const char *reports, enum stats_format fmt, FILE *out)
{
	struct stats *s;
	int status;

	s = stats__collect(path, reports, &status);
	if (!s)
		return status;
	/* Loss is never silent; JSON and CSV stay parseable, so it goes to stderr there. */
	if (s->lost && fmt == STATS_FORMAT_TABLE)
		fprintf(out,
			"WARNING: %llu events were lost while recording (%s): the numbers "
			"below undercount.\n\n",
			s->lost, s->loss);
	else if (s->lost)
		fprintf(stderr,
			"bpfsight stats: warning: %s: %llu events were lost while "
			"recording (%s): the numbers undercount\n",
			path, s->lost, s->loss);
	stats__print(s, fmt, !reports, out);
	if (fflush(out) || ferror(out)) {
		fprintf(stderr, "bpfsight stats: writing the output failed: %s\n", strerror(errno));
		status = EXIT_READ_FAIL;
	}
	stats__free(s);
	return status;
}
