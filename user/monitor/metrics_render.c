// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The metrics in Prometheus's text exposition format 0.0.4: a HELP and a TYPE line per
 * metric, then its samples; histograms as cumulative _bucket{le=...} lines, _sum and _count.
 * Durations are in seconds and named so (`_seconds`), counts end in `_total`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"
#include "metrics_state.h"
#include "mono_clock.h"
#include "nccl.h"
#include "proc.h"
#include "syscall_names.h"
#include "ucall_api.h"

/* A label value: backslash, double quote and newline escaped, as the format wants. */
static void put_label(FILE *f, const char *s, size_t max)
{
	for (size_t i = 0; i < max && s[i]; i++) {
		if (s[i] == '\\' || s[i] == '"')
			fprintf(f, "\\%c", s[i]);
		else if (s[i] == '\n')
			fputs("\\n", f);
		else
			fputc(s[i], f);
	}
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels of a series owner: {pid="123",comm="python3"} or {pid="other",comm=""}. */
struct owner {
	const struct m_proc *p; /* NULL: every process without series of its own */
	const struct m_series *s;
};

static void owner_labels(FILE *f, const struct owner *o)
{
	if (!o->p) {
		fputs("pid=\"other\",comm=\"\"", f);
		return;
	}
	fprintf(f, "pid=\"%u\",comm=\"", o->p->pid);
	put_label(f, o->p->comm, BS_COMM_LEN);
	fputc('"', f);
}

static double secs(__u64 ns)
{
	return ns / 1e9;
}

/* NAME{LABELS,le=...} for each bucket, then _sum and _count. LABELS printed by the caller's fn. */
static void hist_lines(FILE *f, const char *name, const char *labels, const struct m_hist *h,
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
static size_t owners_of(struct metrics *m, struct owner *out, size_t max)
{
	const struct m_proc *p;
	size_t n = 0, it = 0;

	while ((p = hmap__next(m->procs, &it, NULL)) && n + 1 < max)
		if (p->owned)
			out[n++] = (struct owner){ p, &p->s };
	out[n++] = (struct owner){ NULL, &m->other };
	return n;
}

/* A process the gil family measures has GIL series from 0; others, from their first wait. */
static int gil_shown(const struct owner *o)
{
	return (o->p && o->p->python) || o->s->gil_waits || o->s->gil_wait_ns;
}

static void render_gil(FILE *f, const struct owner *ow, size_t n)
{
	head(f, "bpfsight_gil_wait_seconds_total", "counter",
	     "Time threads spent waiting for the GIL, summed over the process's threads.");
	for (size_t i = 0; i < n; i++) {
		if (!gil_shown(&ow[i]))
			continue; /* no zeros for every process: only for those with a GIL */
		fputs("bpfsight_gil_wait_seconds_total{", f);
		owner_labels(f, &ow[i]);
		fprintf(f, "} %.9f\n", secs(ow[i].s->gil_wait_ns));
	}
	head(f, "bpfsight_gil_waits_total", "counter", "Waits for the GIL (contended takes).");
	for (size_t i = 0; i < n; i++) {
		if (!gil_shown(&ow[i]))
			continue;
		fputs("bpfsight_gil_waits_total{", f);
		owner_labels(f, &ow[i]);
		fprintf(f, "} %llu\n", (unsigned long long)ow[i].s->gil_waits);
	}
}

static void render_offcpu(FILE *f, const struct owner *ow, size_t n)
{
	static const char *const states[M_OFF_NR] = { "sleeping", "disk", "runnable", "other" };

	head(f, "bpfsight_offcpu_seconds_total", "counter",
	     "Time threads spent off CPU: sleeping (interruptible), disk (uninterruptible), "
	     "runnable (waiting for a CPU), other.");
	for (size_t i = 0; i < n; i++)
		for (int st = 0; st < M_OFF_NR; st++) {
			if (!ow[i].s->offcpu_ns[st])
				continue;
			fputs("bpfsight_offcpu_seconds_total{", f);
			owner_labels(f, &ow[i]);
			fprintf(f, ",state=\"%s\"} %.9f\n", states[st],
				secs(ow[i].s->offcpu_ns[st]));
		}
}

static void render_syscalls(FILE *f, struct metrics *m, const struct owner *ow, size_t n)
{
	const struct m_count *c;
	const struct m_hist *h;
	struct hkey k;
	char labels[128];
	size_t it;

	head(f, "bpfsight_syscalls_total", "counter", "System calls made.");
	for (size_t i = 0; i < n; i++)
		for (it = 0; ow[i].s->syscalls && (c = hmap__next(ow[i].s->syscalls, &it, &k));) {
			fputs("bpfsight_syscalls_total{", f);
			owner_labels(f, &ow[i]);
			fprintf(f, ",syscall=\"%s\"} %llu\n", syscall_name(k.a),
				(unsigned long long)c->count);
		}
	head(f, "bpfsight_syscall_seconds_total", "counter", "Time spent in system calls.");
	for (size_t i = 0; i < n; i++)
		for (it = 0; ow[i].s->syscalls && (c = hmap__next(ow[i].s->syscalls, &it, &k));) {
			fputs("bpfsight_syscall_seconds_total{", f);
			owner_labels(f, &ow[i]);
			fprintf(f, ",syscall=\"%s\"} %.9f\n", syscall_name(k.a), secs(c->total_ns));
		}
	head(f, "bpfsight_syscall_duration_seconds", "histogram",
	     "System call latency, every traced process; the first bucket is the in-kernel "
	     "count of calls under --osrt-threshold.");
	for (it = 0; (h = hmap__next(m->sys_hist, &it, &k));) {
		snprintf(labels, sizeof(labels), "syscall=\"%s\"", syscall_name(k.a));
		hist_lines(f, "bpfsight_syscall_duration_seconds", labels, h, &m->sys_bounds);
	}
}

static void render_ucalls(FILE *f, struct metrics *m, const struct owner *ow, size_t n, __u32 table)
{
	static const struct {
		const char *name, *help;
		const struct ucall_table *t;
	} kinds[M_UCALL_NR] = {
		[M_UCALL_CUDA] = { "bpfsight_cuda_api_duration_seconds",
				   "CUDA runtime and driver API calls the application made, by "
				   "duration.",
				   &cuda_table },
		[M_UCALL_NCCL] = { "bpfsight_nccl_duration_seconds",
				   "NCCL API calls (collectives, p2p, groups, init), by duration.",
				   &nccl_table },
	};
	const struct m_hist *h;
	const struct ucall_api *a;
	struct hkey k;
	char labels[256];
	size_t used;

	head(f, kinds[table].name, "histogram", kinds[table].help);
	for (size_t i = 0; i < n; i++)
		for (size_t it = 0;
		     ow[i].s->ucalls && (h = hmap__next(ow[i].s->ucalls, &it, &k));) {
			FILE *lf;

			if (k.a != table || !(a = ucall_table__api(kinds[table].t, k.b)))
				continue;
			lf = fmemopen(labels, sizeof(labels), "w");
			if (!lf)
				continue;
			fprintf(lf, "api=\"%s\",", a->name);
			owner_labels(lf, &ow[i]);
			used = ftell(lf);
			fclose(lf);
			labels[used < sizeof(labels) ? used : sizeof(labels) - 1] = 0;
			hist_lines(f, kinds[table].name, labels, h, &m->call_bounds);
		}
}

static void render_rest(FILE *f, struct metrics *m, size_t nowners)
{
	const struct m_gpu *g;
	struct hkey k;
	size_t it;

	head(f, "bpfsight_gpu_kernel_seconds_total", "counter",
	     "GPU kernel execution time by device, as CUPTI timed it (cupti-shim); concurrent "
	     "kernels each count.");
	for (it = 0; (g = hmap__next(m->gpu, &it, &k));)
		fprintf(f, "bpfsight_gpu_kernel_seconds_total{device=\"%llu\"} %.9f\n",
			(unsigned long long)k.a, secs(g->total_ns));
	head(f, "bpfsight_gpu_busy_seconds_total", "counter",
	     "Time a GPU device ran at least one kernel (the union of its kernels' intervals: "
	     "concurrent kernels count once); its rate is the device's kernel utilization.");
	for (it = 0; (g = hmap__next(m->gpu, &it, &k));)
		fprintf(f, "bpfsight_gpu_busy_seconds_total{device=\"%llu\"} %.9f\n",
			(unsigned long long)k.a, secs(g->busy.busy_ns));
	head(f, "bpfsight_gpu_kernels_total", "counter", "GPU kernels executed, by device.");
	for (it = 0; (g = hmap__next(m->gpu, &it, &k));)
		fprintf(f, "bpfsight_gpu_kernels_total{device=\"%llu\"} %llu\n",
			(unsigned long long)k.a, (unsigned long long)g->count);
	head(f, "bpfsight_events_lost_total", "counter",
	     "Events lost, by cause; family=\"all\" where BPF counts one total for every family, "
	     "\"gpu\" for what the cupti-shim dropped.");
	for (__u32 cause = 0; cause < BS_LOSS_NR; cause++)
		fprintf(f, "bpfsight_events_lost_total{family=\"%s\",cause=\"%s\"} %llu\n",
			cause == BS_LOSS_SHIM ? "gpu" : "all", loss_cause_name(cause),
			(unsigned long long)m->lost[cause]);
	head(f, "bpfsight_records_total", "counter", "Records the monitor has read.");
	fprintf(f, "bpfsight_records_total %llu\n", (unsigned long long)m->records);
	head(f, "bpfsight_processes", "gauge",
	     "Processes known (alive, or exited within the grace period).");
	fprintf(f, "bpfsight_processes %zu\n", hmap__count(m->procs));
	head(f, "bpfsight_processes_with_series", "gauge",
	     "Processes with series of their own (at most --top); the rest are pid=\"other\".");
	fprintf(f, "bpfsight_processes_with_series %zu\n", nowners - 1);
}

void metrics__render(struct metrics *m, FILE *f)
{
	struct owner *ow;
	size_t n;

	pthread_mutex_lock(&m->lock);
	metrics__housekeep(m, mono_now_ns());
	ow = calloc(hmap__count(m->procs) + 1, sizeof(*ow));
	if (ow) {
		n = owners_of(m, ow, hmap__count(m->procs) + 1);
		render_gil(f, ow, n);
		render_offcpu(f, ow, n);
		render_syscalls(f, m, ow, n);
		render_ucalls(f, m, ow, n, M_UCALL_CUDA);
		render_ucalls(f, m, ow, n, M_UCALL_NCCL);
		render_rest(f, m, n);
		free(ow);
	}
	pthread_mutex_unlock(&m->lock);
}
