// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The export model in Chrome JSON (export_model.h), the PyTorch profiler's view (EX_PROFILER)
 * in Kineto's layout: an event of a thread's track (its own, or a named one of it) on the
 * thread; a GPU's work on pid = device, tid = stream ("GPU N", "stream S"), as a device's own
 * track; a process's track on its pid; the trace's on pid 0. An event is drawn by its style
 * (chrome_event) unless its shape says what it is: a complete event ("X"), an instant ("i",
 * "s":"t" on a thread, "s":"p" elsewhere) or an async pair ("b", "e" on the thread it ended
 * on, "id2" the range's); its profiler's view names it, gives its category and its args (the
 * event's, then "correlation", "External id", the extra keys, its "Call stack"). A counter's
 * sample is one "C" event of every series it has. Tables are not drawn.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "export_chrome.h"
#include "hmap.h"

void chrome_ex_flows(struct chrome *c, const struct bs_hdr *rec, __u64 *out, __u64 *in)
{
	__u64 o, i;

	ex_flows(&c->sink, rec, &o, &i);
	*out = o;
	if (in)
		*in = i;
}

/* A value as JSON: numbers as they were given, text as a string. */
static void chrome_value(FILE *f, const struct ex_value *v)
{
	switch (v->kind) {
	case EX_INT:
		fprintf(f, "%lld", (long long)v->i);
		break;
	case EX_UINT:
		fprintf(f, "%llu", (unsigned long long)v->u);
		break;
	case EX_REAL:
		fprintf(f, "%.*g", v->digits ? v->digits : 17, v->d);
		break;
	case EX_FIXED:
		fprintf(f, "%.*f", v->digits, v->d);
		break;
	case EX_JSON:
		fputs(v->s, f);
		break;
	case EX_TEXT:
	case EX_STRING:
	case EX_NAME:
		chrome_str(f, v->s);
		break;
	default:
		fputs("null", f);
		break;
	}
}

/* ,"KEY":VALUE of each of V (a comma first when NONEMPTY); whether something was written. */
static int chrome_keyed(FILE *f, const struct ex_value *v, __u32 n, int nonempty)
{
	for (__u32 i = 0; i < n; i++) {
		if (nonempty)
			fputc(',', f);
		chrome_str(f, v[i].key);
		fputc(':', f);
		chrome_value(f, &v[i]);
		nonempty = 1;
	}
	return nonempty;
}

static void chrome_device(struct chrome *c, __u32 device)
{
	if (device < 64 * sizeof(c->devices) / sizeof(c->devices[0]))
		c->devices[device / 64] |= 1ull << (device % 64);
}

/* The pid and tid a track's items go on; whether it is a thread's. 0 or -ENOMEM. */
static int chrome_where(struct chrome *c, const struct ex_track *t, const struct event *ev,
			__u32 *pid, __u32 *tid, int *thread)
{
	*thread = 0;
	switch (t->kind) {
	case EX_GPU_STREAM:
		*pid = t->device;
		*tid = t->stream;
		return hmap__get(c->streams, (struct hkey){ t->device, t->stream }, 1) ? 0
										       : -ENOMEM;
	case EX_GPU:
	case EX_DEVICE:
		chrome_device(c, t->device);
		*pid = t->device;
		*tid = 0;
		return 0;
	case EX_PROCESS:
	case EX_PROCESS_SUB:
		*pid = t->pid;
		*tid = 0;
		return 0;
	case EX_GLOBAL:
		*pid = *tid = 0;
		return 0;
	case EX_THREAD:
	case EX_THREAD_SUB:
		*pid = t->pid;
		*tid = t->tid;
		*thread = 1;
		return 0;
	default: /* EX_STYLE: the event's thread */
		*pid = ev ? ev->pid : 0;
		*tid = ev ? ev->tid : 0;
		*thread = 1;
		return 0;
	}
}

/* A start/end pair that may cross threads: "b" where it began, "e" where it ended. */
static int chrome_async(struct chrome *c, const struct ex_event *e, const char *cat)
{
	const struct event *ev = e->ev;

	if (chrome_thread(c, ev->pid, e->end_tid))
		return -ENOMEM;
	chrome_begin(c, 'b', cat, ev->name, ev->pid, ev->tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)e->async_id);
	chrome_us(c->f, ev->ts);
	chrome_plain_args(c, ev);
	fputc('}', c->f);
	chrome_begin(c, 'e', cat, ev->name, ev->pid, e->end_tid);
	fprintf(c->f, ",\"id2\":{\"local\":\"0x%llx\"},\"ts\":", (unsigned long long)e->async_id);
	chrome_us(c->f, ev->ts + ev->dur);
	fputc('}', c->f);
	return 0;
}

/* An event whose shape is said: its profiler's view names it and gives its args. */
static int chrome_shaped(struct chrome *c, const struct ex_event *e, const char *cat)
{
	const struct ex_profiler *p = e->prof;
	const struct event *ev = e->ev;
	__u64 ts = ev ? ev->ts : e->ts, dur = ev ? ev->dur : e->dur, out = 0, in = 0;
	const char *name = p && p->name ? p->name : ev ? ev->name : "";
	int nonempty = 0, thread, err;
	__u32 pid, tid;

	err = chrome_where(c, &e->on, ev, &pid, &tid, &thread);
	if (err)
		return err;
	if (e->shape == EX_SLICE) {
		chrome_complete(c, cat, name, pid, tid, ts, dur);
	} else {
		chrome_begin(c, 'i', cat, name, pid, tid);
		fputs(",\"ts\":", c->f);
		chrome_us(c->f, ts);
		fputs(thread ? ",\"s\":\"t\"" : ",\"s\":\"p\"", c->f);
	}
	if (p && p->args) {
		nonempty = chrome_args_open(c, p->args);
		if (nonempty < 0)
			return nonempty;
	} else {
		fputs(",\"args\":{", c->f);
	}
	if (p && p->correlated) {
		fprintf(c->f, "%s\"correlation\":%llu", nonempty ? "," : "",
			(unsigned long long)p->correlation);
		nonempty = 1;
	}
	if (p && p->op_id) {
		fprintf(c->f, "%s\"External id\":%llu", nonempty ? "," : "",
			(unsigned long long)p->op_id);
		nonempty = 1;
	}
	if (p)
		nonempty = chrome_keyed(c->f, p->extra, p->nextra, nonempty);
	err = ev ? chrome_stack_args(c, ev, c->model, nonempty) : 0;
	fputs("}}", c->f);
	if (err)
		return err;
	if (e->rec)
		chrome_ex_flows(c, e->rec, &out, &in);
	if (in)
		chrome_flow(c, 'f', in, pid, tid, ts);
	if (out)
		chrome_flow(c, 's', out, pid, tid, ts);
	return 0;
}

static int chrome_ex_event(struct ex_sink *s, const struct ex_event *e)
{
	struct chrome *c = (struct chrome *)s;
	const char *cat = e->prof ? e->prof->cat : NULL;

	if (!cat && e->shape != EX_BY_STYLE) {
		const struct export_style *k = e->ev ? family__kind_style(e->ev->kind) : NULL;

		cat = k && k->cat ? k->cat : e->ev ? e->ev->kind : "";
	}
	switch (e->shape) {
	case EX_ASYNC:
		return chrome_async(c, e, cat);
	case EX_SLICE:
	case EX_INSTANT:
		return chrome_shaped(c, e, cat);
	default:
		return chrome_event(c, e->rec, e->ev, cat);
	}
}

static int chrome_ex_counter(struct ex_sink *s, const struct ex_counter *k, __u64 ts,
			     const struct ex_value *v, __u32 n)
{
	struct chrome *c = (struct chrome *)s;
	__u32 pid, tid;
	int thread, err;

	err = chrome_where(c, &k->on, NULL, &pid, &tid, &thread);
	if (err)
		return err;
	chrome_begin(c, 'C', k->cat, k->name, pid, tid);
	fputs(",\"ts\":", c->f);
	chrome_us(c->f, ts);
	fputs(",\"args\":{", c->f);
	chrome_keyed(c->f, v, n, 0);
	fputs("}}", c->f);
	return 0;
}

/* A device seen: its "GPU N" name at the end. */
static int chrome_ex_track(struct ex_sink *s, const struct ex_track *t, const struct ex_counter *k,
			   __u64 ts)
{
	struct chrome *c = (struct chrome *)s;

	if (!k && t->kind == EX_DEVICE)
		chrome_device(c, t->device);
	return 0;
}

static void chrome_ex_rank(struct ex_sink *s, const char *backend, __s32 rank, __s32 nranks)
{
	struct chrome *c = (struct chrome *)s;

	c->backend = backend;
	c->rank = rank;
	c->nranks = nranks;
}

/* Kineto's spacing ("rank": R), which tools matching the text expect. */
int chrome_rank_key(struct chrome *c, char *buf, size_t space)
{
	if (!c->backend)
		return 0;
	if (c->nranks >= 0)
		return snprintf(buf, space + 1,
				",\"distributedInfo\": {\"backend\": \"%s\", \"rank\": %d, "
				"\"world_size\": %d}",
				c->backend, c->rank, c->nranks);
	return snprintf(buf, space + 1, ",\"distributedInfo\": {\"backend\": \"%s\", \"rank\": %d}",
			c->backend, c->rank);
}

/*
 * "GPU N" and "stream S", Kineto's names of a GPU's pid and a stream's tid: the streams drawn
 * on, then the devices drawn on as a whole.
 */
void chrome_gpu_names(struct chrome *c)
{
	struct hmap *devices = hmap__new(1);
	struct hkey key;
	char name[32];
	size_t it = 0;

	while (hmap__next(c->streams, &it, &key)) {
		/* Once per device (without memory, once per stream: still valid, only longer). */
		if (!devices || !hmap__get(devices, (struct hkey){ key.a, 0 }, 0)) {
			if (devices)
				hmap__get(devices, (struct hkey){ key.a, 0 }, 1);
			snprintf(name, sizeof(name), "GPU %llu", (unsigned long long)key.a);
			chrome_meta_event(c, "process_name", key.a, 0, name, 0);
			/* After every process in the viewer, as Kineto orders devices. */
			chrome_meta_event(c, "process_sort_index", key.a, 0, NULL,
					  (1ull << 32) + key.a);
		}
		snprintf(name, sizeof(name), "stream %llu", (unsigned long long)key.b);
		chrome_meta_event(c, "thread_name", key.a, key.b, name, 0);
		chrome_meta_event(c, "thread_sort_index", key.a, key.b, NULL, key.b);
	}
	hmap__free(devices);
	for (__u32 d = 0; d < 64 * sizeof(c->devices) / sizeof(c->devices[0]); d++)
		if (c->devices[d / 64] & (1ull << (d % 64))) {
			snprintf(name, sizeof(name), "GPU %u", d);
			chrome_meta_event(c, "process_name", d, 0, name, 0);
		}
}

const struct ex_sink_ops chrome_sink_ops = {
	.event = chrome_ex_event,
	.counter = chrome_ex_counter,
	.track = chrome_ex_track,
	.rank = chrome_ex_rank,
};
