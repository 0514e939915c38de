// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format pprof: the CPU samples as a gzipped profile.proto (pprof_profile.h: go tool
 * pprof, Parca, Pyroscope, Grafana). One sample per distinct (stack, thread) with two values,
 * samples and CPU time (samples x the sampling period), labels pid, tid and thread. Memory
 * grows with distinct stacks and frames, not samples.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpu_samples.h"
#include "export.h"
#include "hmap.h"
#include "pprof_profile.h"
#include "trace_model.h"

struct pprof {
	int fd;
	struct hmap *samples; /* (stack id << 1 | kernel, pid << 32 | tid) -> __u64 count */
	__u64 period_ns, first_ts, last_ts;
	__u64 start_realtime, start_mono;
};

static void *pprof_open(const char *out, const struct trace_meta *meta,
			const struct export_opts *opts, int *err)
{
	struct pprof *p = calloc(1, sizeof(*p));

	if (!p || !(p->samples = hmap__new(sizeof(__u64)))) {
		free(p);
		*err = -ENOMEM;
		return NULL;
	}
	p->period_ns = cpu_samples__period_ns(meta->options);
	p->start_realtime = meta->start.realtime_ns;
	p->start_mono = meta->start.mono_ns;
	p->fd = export__create(out);
	if (p->fd < 0) {
		*err = p->fd;
		hmap__free(p->samples);
		free(p);
		return NULL;
	}
	return p;
}

static int pprof_record(void *st, const struct bs_hdr *rec, const struct event *ev,
			const struct trace_model *m)
{
	struct pprof *p = st;
	__u64 *n;

	if (!cpu_samples__is_sample(rec, ev))
		return 0;
	n = hmap__get(p->samples,
		      (struct hkey){ (__u64)ev->stack_id << 1 | ev->stack_in_kernel,
				     (__u64)rec->pid << 32 | rec->tid },
		      1);
	if (!n)
		return -ENOMEM;
	(*n)++;
	if (!p->first_ts || rec->ts < p->first_ts)
		p->first_ts = rec->ts;
	if (rec->ts > p->last_ts)
		p->last_ts = rec->ts;
	return 0;
}

static void pprof_samples(struct pprof *p, const struct trace_model *m, struct pprof_profile *pp)
{
	size_t it = 0;
	struct hkey key;
	__u64 *n;

	pprof_profile__sample_type(pp, "samples", "count");
	pprof_profile__sample_type(pp, "cpu", "nanoseconds");
	while ((n = hmap__next(p->samples, &it, &key))) {
		__u32 pid = key.b >> 32, tid = (__u32)key.b;
		const char *tn = trace_model__thread_name(m, tid);

		pprof_profile__sample(pp, m, trace_model__stack(m, (__u32)(key.a >> 1)),
				      key.a & 1 ? "[kernel]" : NULL, "[no user stack]");
		pprof_profile__value(pp, *n);
		pprof_profile__value(pp, *n * p->period_ns);
		pprof_profile__label_num(pp, "pid", pid);
		pprof_profile__label_num(pp, "tid", tid);
		if (tn)
			pprof_profile__label_str(pp, "thread", tn);
		pprof_profile__sample_end(pp);
	}
}

static int pprof_finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct pprof *p = st;
	struct pprof_profile *pp = pprof_profile__new();
	int err = pp ? 0 : -ENOMEM;

	if (!err && !hmap__count(p->samples))
		err = -ENODATA; /* a profile of nothing */
	if (!err) {
		pprof_samples(p, m, pp);
		err = pprof_profile__write(pp, p->fd, "cpu", "nanoseconds", (__s64)p->period_ns,
					   p->first_ts && p->start_realtime >= p->start_mono
						   ? p->first_ts - p->start_mono + p->start_realtime
						   : 0,
					   p->last_ts - p->first_ts, "cpu");
		p->fd = -1;
	}
	if (p->fd >= 0)
		close(p->fd);
	pprof_profile__free(pp);
	hmap__free(p->samples);
	free(p);
	return err;
}

static void pprof_abort(void *st)
{
	struct pprof *p = st;

	if (!p)
		return;
	close(p->fd);
	hmap__free(p->samples);
	free(p);
}

const struct exporter export_pprof = {
	.format = "pprof",
	.desc = "CPU samples as a gzipped pprof profile (go tool pprof, Parca, Pyroscope)",
	.suffix = ".pb.gz",
	.open = pprof_open,
	.record = pprof_record,
	.finish = pprof_finish,
	.abort = pprof_abort,
	.needs = "CPU samples (record with -t cpu)",
};
