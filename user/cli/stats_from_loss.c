// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats --from's warning of the events lost while recording (stats_from.h), stats FILE's
 * (stats.c, stats__run_opts) from the shipped `loss` rows: how many, by family and cause, and
 * the reports printed here that the losses touch (their family's, or every report for the
 * losses of all families, of an unknown one, or of the family every report names processes by).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "ch_verdict.h"
#include "family.h"
#include "family_stats.h"
#include "human.h"
#include "msg.h"
#include "report.h"
#include "stats_from.h"
#include "table.h"

/* The family report NAME is of, NULL when none has it. */
static const struct family *family_of(const char *name)
{
	for_each_family(it)
		for (const struct report *const *rp = family__stats(it.f)->reports; rp && *rp; rp++)
			if (!strcmp((*rp)->name, name))
				return it.f;
	return NULL;
}

/* Whether the losses in T (their families, column FAM) can touch report NAME. */
static int touches(const struct table *t, int fam, const char *name)
{
	const struct family *f = family_of(name), *always = family__always();

	for (int r = 0; f && r < table__nrows(t); r++) {
		const char *lf = table__get_str(t, r, fam);

		if (lf && (!strcmp(lf, f->name) || !strcmp(lf, "all") || !strcmp(lf, "unknown") ||
			   (always && !strcmp(lf, always->name))))
			return 1;
	}
	return !f;
}

int stats_from__loss_said(struct ch_server *s, const char *where, const char *job,
			  const char *files, const char *list, struct stats_from_loss *l)
{
	struct table *t = table__new(ch_verdict_losses.name);
	size_t used = 0, nused = 0;
	int err, fam;
	char *tok, *save = NULL, copy[512];

	*l = (struct stats_from_loss){ 0 };
	err = t ? stats_from__table(s, &ch_verdict_losses, where, job, files, t) : -ENOMEM;
	if (err || !table__nrows(t)) {
		table__free(t);
		return err;
	}
	fam = table__col(t, "family");
	for (int r = 0; r < table__nrows(t); r++) {
		__u64 n = table__get_u64(t, r, table__col(t, "count"));
		int k = snprintf(l->causes + used, sizeof(l->causes) - used, "%s%s %s: %llu",
				 used ? ", " : "", table__get_str(t, r, fam) ?: "",
				 table__get_str(t, r, table__col(t, "cause")) ?: "",
				 (unsigned long long)n);

		if (k > 0 && (size_t)k < sizeof(l->causes) - used)
			used += (size_t)k;
		l->lost += n;
	}
	snprintf(copy, sizeof(copy), "%s", list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		if (!touches(t, fam, tok))
			continue;
		k = snprintf(l->reports + nused, sizeof(l->reports) - nused, "%s%s",
			     l->touched ? ", " : "", tok);
		if (k > 0 && (size_t)k < sizeof(l->reports) - nused)
			nused += (size_t)k;
		l->touched++;
	}
	table__free(t);
	return 0;
}

int stats_from__losses(struct ch_server *s, const struct stats_from *f, const char *where,
		       const char *job, const char *files, const char *list, FILE *out)
{
	struct stats_from_loss l;
	char warn[1280];
	int err = stats_from__loss_said(s, where, job, files, list, &l);

	if (err || !l.lost)
		return err;
	if (l.touched && f->fmt == STATS_FORMAT_TABLE) {
		snprintf(warn, sizeof(warn),
			 "WARNING: %llu events were lost while recording (%s): %s below "
			 "undercount%s.",
			 l.lost, l.causes, l.reports, l.touched > 1 ? "" : "s");
		human__wrap(out, warn, f->width, 0, 2);
		fputc('\n', out);
	} else if (l.touched) {
		pr_warn("%s: %llu events were lost while recording (%s): %s undercount%s\n", f->url,
			l.lost, l.causes, l.reports, l.touched > 1 ? "" : "s");
	} else {
		pr_note("%s: %llu events were lost while recording (%s); the reports shown do "
			"not read them\n",
			f->url, l.lost, l.causes);
	}
	return 0;
}
