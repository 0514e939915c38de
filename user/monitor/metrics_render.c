// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The metrics in Prometheus's text exposition format 0.0.4: a HELP and a TYPE line per
 * metric, then its samples; histograms as cumulative _bucket{le=...} lines, _sum and _count.
 * Durations are in seconds and named so (`_seconds`), counts end in `_total`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics_state.h"
#include "mono_clock.h"
#include "hmap.h"
#include "utf8.h"

/*
 * A label value: S escaped as the format says, and valid UTF-8 (a comm is any bytes a process
 * chose, and Prometheus refuses a scrape with invalid UTF-8): a byte that starts no valid
 * sequence becomes U+FFFD.
 */
void metrics__label(FILE *f, const char *s, size_t max)
{
	size_t n = strnlen(s, max), len;

	for (size_t i = 0; i < n; i += len ? len : 1) {
		len = utf8__seq_len((const unsigned char *)s + i, n - i);
		if (!len)
			fputs(UTF8_REPLACEMENT, f);
		else if (s[i] == '\\' || s[i] == '"')
			fprintf(f, "\\%c", s[i]);
		else if (s[i] == '\n')
			fputs("\\n", f);
		else
			fwrite(s + i, 1, len, f);
	}
}

void metrics__head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics__owner_labels(FILE *f, const struct metrics_owner *o)
{
	if (!o->p) {
		fputs("pid=\"other\",comm=\"\"", f);
		return;
	}
	fprintf(f, "pid=\"%u\",comm=\"", o->p->pid);
	metrics__label(f, o->p->comm, BS_COMM_LEN);
	fputc('"', f);
	if (!o->p->id.job[0])
		return;
	fputs(",job_name=\"", f);
	metrics__label(f, o->p->id.job, sizeof(o->p->id.job));
	fputs("\",role=\"", f);
	metrics__label(f, o->p->id.role, sizeof(o->p->id.role));
	fputc('"', f);
}

static double secs(__u64 ns)
{
	return ns / 1e9;
}

void metrics__hist_lines(FILE *f, const char *name, const char *labels, const struct m_hist *h,
			 const struct m_bounds *b)
{
	__u64 cum = 0;

	for (__u32 i = 0; i < b->n; i++) {
		cum += h->bucket[i];
		fprintf(f, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, secs(b->ns[i]),
			(unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
	fprintf(f, "%s_sum{%s} %.9f\n", name, labels, secs(h->sum_ns));
	fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* Owners: every process that owns series now (alive, or exited within the grace), then other. */
static size_t owners_of(struct metrics *m, struct metrics_owner *out, size_t max)
{
	struct metrics_proc *p;
	size_t n = 0, it = 0;

	while ((p = hmap__next(m->procs, &it, NULL)) && n + 1 < max)
		if (p->owned)
			out[n++] = (struct metrics_owner){ p, &p->s };
	out[n++] = (struct metrics_owner){ NULL, &m->other };
	return n;
}

/* What the monitor itself counts: losses, records, processes. */
static void render_own(FILE *f, struct metrics *m, size_t nowners)
{
	const struct loss_cause *l;

	metrics__head(f, "bpfsight_events_lost_total", "counter",
		      "Events lost, by the family whose events they were and cause; family=\"all\" "
		      "for what the whole recording lost (write_failed, flight_size).");
	for_each_family(fit) {
		int block = loss__family_block(fit.f);

		for (int own = 0; own <= 1 && block >= 0; own++)
			for (l = own ? fit.f->losses : recording_losses; l && l->name; l++)
				fprintf(f,
					"bpfsight_events_lost_total{family=\"%s\",cause=\"%s\"} "
					"%llu\n",
					fit.f->name, l->name,
					(unsigned long long)m->lost[BS_LOST_KEY(fit.i, l->cause)]);
	}
	for (l = recording_losses; l->name; l++)
		if (m->lost_all[l->cause] || l->cause == BS_LOSS_WRITE ||
		    l->cause == BS_LOSS_FLIGHT)
			fprintf(f, "bpfsight_events_lost_total{family=\"all\",cause=\"%s\"} %llu\n",
				l->name, (unsigned long long)m->lost_all[l->cause]);
	metrics__head(f, "bpfsight_records_total", "counter", "Records the monitor has read.");
	fprintf(f, "bpfsight_records_total %llu\n", (unsigned long long)m->records);
	metrics__head(f, "bpfsight_processes", "gauge",
		      "Processes known (alive, or exited within the grace period).");
	fprintf(f, "bpfsight_processes %zu\n", hmap__count(m->procs));
	metrics__head(f, "bpfsight_processes_with_series", "gauge",
		      "Processes with series of their own: at most --top alive, and at most --top "
		      "exited within the grace; the rest are pid=\"other\".");
	fprintf(f, "bpfsight_processes_with_series %zu\n", nowners - 1);
}

void metrics__render(struct metrics *m, FILE *f)
{
	struct metrics_owner *ow;
	size_t n;

	pthread_mutex_lock(&m->lock);
	metrics__housekeep(m, mono_now_ns());
	ow = calloc(hmap__count(m->procs) + 1, sizeof(*ow));
	if (ow) {
		n = owners_of(m, ow, hmap__count(m->procs) + 1);
		for_each_family_slot(fit, m->states)
			if (fit.f->metrics && fit.f->metrics->render)
				fit.f->metrics->render(f, *fit.slot, ow, n);
		render_own(f, m, n);
		free(ow);
	}
	pthread_mutex_unlock(&m->lock);
}
