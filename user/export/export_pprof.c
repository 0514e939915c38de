// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * export --format pprof: the CPU samples as a gzipped profile.proto (github.com/google/pprof's
 * format: go tool pprof, Parca, Pyroscope, Grafana). One sample per distinct (stack, thread)
 * with two values, samples and CPU time (samples x the sampling period), labels pid, tid and
 * thread; a location per distinct frame (a Python line, a native function's address), a
 * function per (name, file). Memory grows with distinct stacks and frames, not samples.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "array.h"
#include "cpu_samples.h"
#include "export.h"
#include "pb.h"
#include "stack_format.h"
#include "hmap.h"

/* profile.proto field numbers. */
enum {
	P_SAMPLE_TYPE = 1,
	P_SAMPLE = 2,
	P_LOCATION = 4,
	P_FUNCTION = 5,
	P_STRING = 6,
	P_TIME = 9,
	P_DURATION = 10,
	P_PERIOD_TYPE = 11,
	P_PERIOD = 12,
	P_DEFAULT_TYPE = 14,
};

struct pprof {
	gzFile gz;
	struct hmap *samples; /* (stack id << 1 | kernel, pid << 32 | tid) -> __u64 count */
	__u64 period_ns, first_ts, last_ts;
	__u64 start_realtime, start_mono;
	/* Built at finish. */
	struct hmap *strs; /* (hash, len | probe << 32) -> __u64 index + 1 */
	char **str;
	__u64 nstr;
	size_t capstr;
	struct hmap *funcs; /* (name index, file index) -> __u64 id */
	struct hmap *locs;  /* (frame identity) -> __u64 id */
	struct pb tables;   /* functions and locations, written as they are met */
};

static __u64 fnv(const char *s)
{
	__u64 h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The string table index of S (interned: compared, never trusted to a hash alone). */
static __u64 str_index(struct pprof *p, const char *s)
{
	size_t len = strlen(s);

	for (__u64 probe = 0;; probe++) {
		__u64 *v = hmap__get(p->strs, (struct hkey){ fnv(s), len | probe << 32 }, 1);

		if (!v)
			return 0;
		if (*v && !strcmp(p->str[*v - 1], s))
			return *v - 1;
		if (*v)
			continue; /* another string with this hash and length */
		if (array__grow((void **)&p->str, p->nstr, &p->capstr, sizeof(*p->str)))
			return 0;
		p->str[p->nstr] = strdup(s);
		if (!p->str[p->nstr])
			return 0;
		*v = ++p->nstr;
		return p->nstr - 1;
	}
}

static __u64 meta_rate(const struct trace_meta *meta)
{
	const char *o = meta->options ? strstr(meta->options, "sample_rate=") : NULL;
	unsigned long hz = o ? strtoul(o + 12, NULL, 10) : 0;

	return hz ? hz : 99; /* traces from before the option: the default */
}

static void *pprof_open(const char *out, const struct trace_meta *meta, int *err)
{
	struct pprof *p = calloc(1, sizeof(*p));
	int fd;

	if (!p || !(p->samples = hmap__new(sizeof(__u64)))) {
		free(p);
		*err = -ENOMEM;
		return NULL;
	}
	p->period_ns = 1000000000ull / meta_rate(meta);
	p->start_realtime = meta->start.realtime_ns;
	p->start_mono = meta->start.mono_ns;
	fd = export__create(out);
	p->gz = fd < 0 ? NULL : gzdopen(fd, "wb");
	if (!p->gz) {
		*err = fd < 0 ? fd : -ENOMEM;
		if (fd >= 0)
			close(fd);
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

/* The function id of (NAME, FILE, START), writing its Function message when new. */
static __u64 func_id(struct pprof *p, const char *name, const char *file)
{
	__u64 ni = str_index(p, name), fi = str_index(p, file);
	__u64 *id = hmap__get(p->funcs, (struct hkey){ ni, fi }, 1);

	if (!id)
		return 0;
	if (!*id) {
		*id = hmap__count(p->funcs);
		pb__begin(&p->tables, P_FUNCTION);
		pb__uint(&p->tables, 1, *id);
		pb__int(&p->tables, 2, ni);
		pb__int(&p->tables, 3, ni);
		pb__int(&p->tables, 4, fi);
		pb__end(&p->tables);
	}
	return *id;
}

/* The location id of frame F (or of a marker frame named TEXT), written when new. */
static __u64 loc_id(struct pprof *p, const struct trace_model *m, const struct bs_frame *f,
		    const char *text)
{
	char buf[512];
	const char *name = text ? text : stack_frame__func(f, m, buf, sizeof(buf));
	__u64 fid = func_id(p, name, f ? stack_frame__file(f, m) : "");
	__u64 addr = f && f->kind == BS_FRAME_NATIVE ? f->addr : 0;
	__u64 line = f && f->kind == BS_FRAME_PYTHON ? f->line : 0;
	__u64 *id = hmap__get(p->locs, (struct hkey){ fid, addr ^ line << 48 }, 1);

	if (!id)
		return 0;
	if (!*id) {
		*id = hmap__count(p->locs);
		pb__begin(&p->tables, P_LOCATION);
		pb__uint(&p->tables, 1, *id);
		if (addr)
			pb__uint(&p->tables, 3, addr);
		pb__begin(&p->tables, 4); /* Line */
		pb__uint(&p->tables, 1, fid);
		if (line)
			pb__int(&p->tables, 2, line);
		pb__end(&p->tables);
		pb__end(&p->tables);
	}
	return *id;
}

static void label(struct pb *pb, __u64 key, __u64 str, __s64 num)
{
	pb__begin(pb, 3);
	pb__int(pb, 1, key);
	if (str)
		pb__int(pb, 2, str);
	else
		pb__int(pb, 3, num);
	pb__end(pb);
}

static void value_type(struct pprof *p, struct pb *pb, __u32 field, const char *type,
		       const char *unit)
{
	__u64 t = str_index(p, type), u = str_index(p, unit);

	pb__begin(pb, field);
	pb__int(pb, 1, t);
	pb__int(pb, 2, u);
	pb__end(pb);
}

static int pprof_write(struct pprof *p, const struct trace_model *m, struct pb *pb)
{
	size_t it = 0;
	struct hkey key;
	__u64 *n;

	str_index(p, ""); /* string_table[0] is "" */
	value_type(p, pb, P_SAMPLE_TYPE, "samples", "count");
	value_type(p, pb, P_SAMPLE_TYPE, "cpu", "nanoseconds");
	while ((n = hmap__next(p->samples, &it, &key))) {
		const struct trace_stack *s = trace_model__stack(m, (__u32)(key.a >> 1));
		__u32 pid = key.b >> 32, tid = (__u32)key.b;
		const char *tn = trace_model__thread_name(m, tid);

		pb__begin(pb, P_SAMPLE);
		if (key.a & 1)
			pb__uint(pb, 1, loc_id(p, m, NULL, "[kernel]"));
		for (__u32 i = 0; s && i < s->nframes; i++)
			pb__uint(pb, 1, loc_id(p, m, &s->frames[i], NULL));
		if (s && (s->flags & BS_STACK_TRUNCATED))
			pb__uint(pb, 1, loc_id(p, m, NULL, "[truncated]"));
		if (!s || !s->nframes)
			pb__uint(pb, 1, loc_id(p, m, NULL, "[no user stack]"));
		pb__int(pb, 2, *n);
		pb__int(pb, 2, *n * p->period_ns);
		label(pb, str_index(p, "pid"), 0, pid);
		label(pb, str_index(p, "tid"), 0, tid);
		if (tn)
			label(pb, str_index(p, "thread"), str_index(p, tn), 0);
		pb__end(pb);
	}
	return 0;
}

static int pprof_finish(void *st, const struct trace_model *m, const struct trace_status *status)
{
	struct pprof *p = st;
	struct pb body = { 0 };
	int err;

	p->strs = hmap__new(sizeof(__u64));
	p->funcs = hmap__new(sizeof(__u64));
	p->locs = hmap__new(sizeof(__u64));
	err = !p->strs || !p->funcs || !p->locs || pb__init(&body, 0) || pb__init(&p->tables, 0)
		      ? -ENOMEM
		      : 0;
	if (!err && !hmap__count(p->samples))
		err = -ENODATA; /* a profile of nothing */
	if (!err) {
		pprof_write(p, m, &body);
		value_type(p, &body, P_PERIOD_TYPE, "cpu", "nanoseconds");
		pb__int(&body, P_PERIOD, p->period_ns);
		if (p->first_ts && p->start_realtime >= p->start_mono) {
			pb__int(&body, P_TIME, p->first_ts - p->start_mono + p->start_realtime);
			pb__int(&body, P_DURATION, p->last_ts - p->first_ts);
		}
		pb__int(&body, P_DEFAULT_TYPE, str_index(p, "cpu"));
		for (__u64 i = 0; i < p->nstr; i++)
			pb__string(&p->tables, P_STRING, p->str[i]);
		err = pb__err(&body) ?: pb__err(&p->tables);
	}
	if (!err && (gzwrite(p->gz, body.buf, body.len) != (int)body.len ||
		     gzwrite(p->gz, p->tables.buf, p->tables.len) != (int)p->tables.len))
		err = -EIO;
	if (gzclose(p->gz) != Z_OK && !err)
		err = -EIO;
	for (__u64 i = 0; i < p->nstr; i++)
		free(p->str[i]);
	free(p->str);
	pb__free(&body);
	pb__free(&p->tables);
	hmap__free(p->strs);
	hmap__free(p->funcs);
	hmap__free(p->locs);
	hmap__free(p->samples);
	free(p);
	return err;
}

static void pprof_abort(void *st)
{
	struct pprof *p = st;

	if (!p)
		return;
	gzclose(p->gz);
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
