// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mem family on the report's page: tensor memory per device over time (allocated and
 * reserved, every process's summed, as a device holds it), each process's resident memory,
 * and a table of the peaks (each process's device and RSS, and when). Tensor bytes are
 * mem_live.h's, as in every view; a process's memory goes at its exit. Drawn only for a trace
 * with mem's records (mem is opt-in).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "hmap.h"
#include "human.h"
#include "mem.h"
#include "mem_live.h"
#include "page.h"
#include "table.h"

enum { ALLOCATED, RESERVED, NKINDS };

#define DEV_KEY(device) (1ull << 16 | (__u16)(device))
#define MEM_PEAK_ROWS	20
/* "pid 4215 (DataLoader worker 1 of trainer 4213)": a series's label (page.h's) holds it whole */
#define NAME_LEN 96

/* A process (one life of a pid) on one device: what it holds now, its peaks. */
struct mem_page_held {
	__u64 now[NKINDS], peak[NKINDS], peak_ts[NKINDS];
	__u8 held[NKINDS];
};

/* A device, every process summed ({DEV_KEY(device), kind + 1}), or a process's RSS ({proc, 0}). */
struct mem_page_line {
	__u64 now;
	struct level_bins bins;
};

struct mem_page {
	struct mem_live *live;
	struct hmap *gen;   /* {pid, 0} -> __u32: lives of the pid ended (exits) */
	struct hmap *held;  /* {proc, DEV_KEY(device)} -> mem_page_held; proc = gen << 32 | pid */
	struct hmap *lines; /* struct mem_page_line */
	struct hmap *names; /* {proc, 0} -> char[NAME_LEN]: "pid 42 (python3)" */
	struct hmap *lives; /* {proc, 0} -> u8: the lives with memory */
	int any;	    /* the trace has mem's records */
};

static void mem_page_free(void *st)
{
	struct mem_page *g = st;
	struct mem_page_line *l;
	size_t it = 0;

	if (!g)
		return;
	while (g->lines && (l = hmap__next(g->lines, &it, NULL)))
		level_bins__free(&l->bins);
	mem_live__free(g->live);
	hmap__free(g->gen);
	hmap__free(g->held);
	hmap__free(g->lines);
	hmap__free(g->names);
	hmap__free(g->lives);
	free(g);
}

static int mem_page_open(const struct page *p, void **st)
{
	struct mem_page *g = calloc(1, sizeof(*g));

	if (g) {
		g->live = mem_live__new();
		g->gen = hmap__new(sizeof(__u32));
		g->held = hmap__new(sizeof(struct mem_page_held));
		g->lines = hmap__new(sizeof(struct mem_page_line));
		g->names = hmap__new(NAME_LEN);
		g->lives = hmap__new(1);
	}
	if (!g || !g->live || !g->gen || !g->held || !g->lines || !g->names || !g->lives) {
		mem_page_free(g);
		return -ENOMEM;
	}
	*st = g;
	return 0;
}

/* The pid's current life. */
static __u64 proc_of(const struct mem_page *g, __u32 pid)
{
	const __u32 *gen = hmap__get(g->gen, (struct hkey){ pid, 0 }, 0);

	return (__u64)(gen ? *gen : 0) << 32 | pid;
}

/* Line K is V from TS on. */
static int line_set(const struct page *p, struct mem_page *g, struct hkey k, __u64 ts, __u64 v)
{
	struct mem_page_line *l = hmap__get(g->lines, k, 0);

	if (!l) {
		if (!(l = hmap__get(g->lines, k, 1)))
			return -ENOMEM;
		level_bins__init(&l->bins, p->origin, REPORT_BIN_NS);
	}
	l->now = v;
	return level_bins__set(&l->bins, ts, v);
}

/* The device's line KIND moves by what the process's holding did (WAS to NOW). */
static int device_moves(const struct page *p, struct mem_page *g, __s16 device, int kind, __u64 ts,
			__u64 was, __u64 now)
{
	struct hkey k = { DEV_KEY(device), kind + 1 };
	const struct mem_page_line *l = hmap__get(g->lines, k, 0);
	__u64 sum = l ? l->now : 0;

	sum = sum + now > was ? sum + now - was : 0;
	return line_set(p, g, k, ts, sum);
}

/* What PID holds on DEVICE of KIND is V from TS on. */
static int hold(const struct page *p, struct mem_page *g, __u32 pid, __s16 device, int kind,
		__u64 ts, __u64 v)
{
	struct mem_page_held *h =
		hmap__get(g->held, (struct hkey){ proc_of(g, pid), DEV_KEY(device) }, 1);
	__u64 was;

	if (!h || !hmap__get(g->lives, (struct hkey){ proc_of(g, pid), 0 }, 1))
		return -ENOMEM;
	was = h->held[kind] ? h->now[kind] : 0;
	h->now[kind] = v;
	h->held[kind] = 1;
	if (v > h->peak[kind]) {
		h->peak[kind] = v;
		h->peak_ts[kind] = ts;
	}
	return device_moves(p, g, device, kind, ts, was, v);
}

/* A record's hooks' argument: the page, mem's state, the first error. */
struct ctx {
	const struct page *p;
	struct mem_page *g;
	int err;
};

static void on_alloc(void *arg, const struct bs_mem_alloc *r)
{
	struct ctx *c = arg;
	struct mem_held h;

	mem_live__apply(c->g->live, r, 0, NULL);
	mem_live__held(c->g->live, r, &h);
	c->err = hold(c->p, c->g, r->h.pid, r->device, ALLOCATED, r->h.ts, h.allocated);
	if (!c->err && h.has_reserved)
		c->err = hold(c->p, c->g, r->h.pid, r->device, RESERVED, r->h.ts, h.reserved);
}

static void on_rss(void *arg, __u32 pid, __u64 ts, __u64 rss)
{
	struct ctx *c = arg;
	__u64 proc = proc_of(c->g, pid);

	c->err = hmap__get(c->g->lives, (struct hkey){ proc, 0 }, 1) ? 0 : -ENOMEM;
	if (!c->err)
		c->err = line_set(c->p, c->g, (struct hkey){ proc, 0 }, ts, rss);
}

/*
 * What PID held leaves its devices at TS; at its end (an exit, or its pid taken by a new
 * process) its RSS goes to 0 and its next life begins. An exec keeps the life (and the RSS line
 * the new program's records go on with).
 */
static void on_gone(void *arg, __u32 pid, __u64 ts, enum mem_gone how)
{
	struct ctx *c = arg;
	struct mem_page *g = c->g;
	__u64 proc = proc_of(g, pid);
	struct mem_page_held *h;
	struct hkey k;
	size_t it = 0;
	__u32 *gen;

	if (!hmap__get(g->lives, (struct hkey){ proc, 0 }, 0))
		return;
	while (!c->err && (h = hmap__next(g->held, &it, &k))) {
		if (k.a != proc)
			continue;
		for (int kind = 0; kind < NKINDS && !c->err; kind++)
			if (h->held[kind]) {
				h->held[kind] = 0;
				c->err = device_moves(c->p, g, (__s16)(__u16)k.b, kind, ts,
						      h->now[kind], 0);
			}
	}
	mem_live__forget(g->live, pid);
	if (c->err || how == MEM_GONE_EXEC)
		return;
	if (hmap__get(g->lines, (struct hkey){ proc, 0 }, 0))
		c->err = line_set(c->p, g, (struct hkey){ proc, 0 }, ts, 0);
	if (!c->err && !(gen = hmap__get(g->gen, (struct hkey){ pid, 0 }, 1)))
		c->err = -ENOMEM;
	if (!c->err)
		(*gen)++;
}

static const struct mem_visit page_visit = {
	.alloc = on_alloc,
	.rss = on_rss,
	.gone = on_gone,
};

/* Every record; any of mem's puts memory on the page (an OOM alone: timelines saying none). */
static int mem_page_record(const struct page *p, void *st, const struct bs_hdr *rec,
			   const struct trace_model *m)
{
	struct ctx c = { p, st, 0 };

	if (rec->type >= BS_REC_MEM_ALLOC && rec->type <= BS_REC_MEM_OOM)
		c.g->any = 1;
	mem_visit(&page_visit, &c, rec);
	return c.err;
}

/* PROC's name in the legend and the table: "pid 42 (python3)". */
static int name(struct mem_page *g, const struct trace_model *m, __u64 proc)
{
	const char *comm;
	char *n;

	if (hmap__get(g->names, (struct hkey){ proc, 0 }, 0))
		return 0;
	if (!(n = hmap__get(g->names, (struct hkey){ proc, 0 }, 1)))
		return -ENOMEM;
	comm = trace_model__process_name(m, (__u32)proc);
	if (comm && *comm)
		snprintf(n, NAME_LEN, "pid %u (%s)", (__u32)proc, comm);
	else
		snprintf(n, NAME_LEN, "pid %u", (__u32)proc);
	return 0;
}

/* Every life's name, while the trace's names are known. */
static int mem_page_named(const struct page *p, void *st, const struct trace_model *m)
{
	struct mem_page *g = st;
	struct hkey k;
	size_t it = 0;
	int err = 0;

	while (!err && hmap__next(g->held, &it, &k))
		err = name(g, m, k.a);
	for (it = 0; !err && hmap__next(g->lines, &it, &k);)
		if (!k.b) /* a process's RSS (a device's line has its kind + 1) */
			err = name(g, m, k.a);
	return err;
}

static const char *name_of(const struct mem_page *g, __u64 proc)
{
	const char *n = hmap__get(g->names, (struct hkey){ proc, 0 }, 0);

	return n ? n : "?";
}

/* "cpu tensors", "cuda:0 allocated", "cuda:0 reserved" */
static void what(char *buf, size_t len, __s16 device, int kind)
{
	char dev[16];

	if (device == BS_MEM_DEV_CPU)
		snprintf(buf, len, "cpu tensors");
	else
		snprintf(buf, len, "%s %s", mem_device_name(device, dev, sizeof(dev)),
			 kind == ALLOCATED ? "allocated" : "reserved");
}

/* The lines of devices (DEVICES) or of processes' RSS, into *OUT; how many. */
static int levels(struct mem_page *g, int devices, struct page_level **out)
{
	struct page_level *s = calloc(hmap__count(g->lines) + 1, sizeof(*s));
	const struct mem_page_line *l;
	struct hkey k;
	size_t it = 0;
	int n = 0;

	while (s && (l = hmap__next(g->lines, &it, &k))) {
		if ((k.b != 0) != devices)
			continue;
		if (devices)
			what(s[n].label, sizeof(s[n].label), (__s16)(__u16)k.a, (int)k.b - 1);
		else
			snprintf(s[n].label, sizeof(s[n].label), "%s", name_of(g, k.a));
		s[n++].bins = &l->bins;
	}
	*out = s;
	return n;
}

static void mem_page_timelines(const struct page *p, void *st, FILE *f)
{
	struct mem_page *g = st;
	struct page_level *s;
	int n;

	if (!g->any)
		return; /* mem is opt-in: a trace without it has no memory to show */
	n = levels(g, 1, &s);
	if (n)
		page__level_chart(p, f, "tl-mem", "Tensor memory",
				  "per device, every process's summed: allocated (live tensors) "
				  "and reserved (the CUDA caching allocator's); each point the "
				  "highest in its time",
				  s, n);
	else
		page__no_data(f, "tl-mem", "Tensor memory",
			      "no tensor allocation recorded (mem family: PyTorch's allocators)");
	free(s);
	n = levels(g, 0, &s);
	if (n)
		page__level_chart(
			p, f, "tl-rss", "Resident memory",
			"per process (RSS, recorded each --mem-step it moves); each point "
			"the highest in its time",
			s, n);
	else
		page__no_data(f, "tl-rss", "Resident memory", "no resident memory recorded");
	free(s);
}

/* A row of the peaks' table. */
struct peak_row {
	__u64 proc, bytes, ts;
	char what[32];
};

static int by_bytes(const void *a, const void *b)
{
	const struct peak_row *x = a, *y = b;

	return x->bytes < y->bytes   ? 1
	       : x->bytes > y->bytes ? -1
				     : (x->proc > y->proc) - (x->proc < y->proc);
}

/* Every process's peak on each device and of its RSS, highest first. */
static size_t peak_rows(const struct mem_page *g, struct peak_row **out)
{
	struct peak_row *r =
		calloc(hmap__count(g->held) * NKINDS + hmap__count(g->lines) + 1, sizeof(*r));
	const struct mem_page_held *h;
	const struct mem_page_line *l;
	struct hkey k;
	size_t it = 0, n = 0;

	while (r && (h = hmap__next(g->held, &it, &k)))
		for (int kind = 0; kind < NKINDS; kind++) {
			if (!h->peak[kind])
				continue;
			r[n] = (struct peak_row){ k.a, h->peak[kind], h->peak_ts[kind] };
			what(r[n++].what, sizeof(r->what), (__s16)(__u16)k.b, kind);
		}
	for (it = 0; r && (l = hmap__next(g->lines, &it, &k));)
		if (!k.b && l->bins.peak)
			r[n++] = (struct peak_row){ k.a, l->bins.peak, l->bins.peak_ts, "rss" };
	qsort(r, n, sizeof(*r), by_bytes);
	*out = r;
	return n;
}

static void mem_page_sections(const struct page *p, void *st, FILE *f)
{
	enum { C_PROCESS, C_MEMORY, C_PEAK, C_AT, NCOLS };
	static const struct table_col cols[NCOLS] = {
		[C_PROCESS] = { "process", "Process", TABLE_STR },
		[C_MEMORY] = { "memory", "Memory", TABLE_STR },
		/* In human units on the page, the exact bytes on hover. */
		[C_PEAK] = { "peak_bytes", "Peak (B)", TABLE_U64 },
		[C_AT] = { "at_s", "At (s)", TABLE_DOUBLE, .precision = 3 },
	};
	struct mem_page *g = st;
	struct table *t = table__new("mem_peaks");
	struct peak_row *r = NULL;
	size_t n = g->any && t ? peak_rows(g, &r) : 0;

	if (n)
		table__add_cols(t, cols, NCOLS);
	for (size_t i = 0; i < n && i < MEM_PEAK_ROWS; i++) {
		table__row(t);
		table__set_str(t, C_PROCESS, name_of(g, r[i].proc));
		table__set_str(t, C_MEMORY, r[i].what);
		table__set_u64(t, C_PEAK, r[i].bytes);
		table__set_double(t, C_AT, r[i].ts > p->origin ? (r[i].ts - p->origin) / 1e9 : 0);
	}
	if (n && !table__err(t)) {
		fprintf(f,
			"<section id=\"mem-peaks\"><h2>Memory peaks</h2>\n<p class=\"what\">"
			"The highest each process held, on each device and resident (RSS), and "
			"when, from the recording's start; %zu of %zu</p>\n",
			n < MEM_PEAK_ROWS ? n : MEM_PEAK_ROWS, n);
		page__table(f, t, 0);
		fprintf(f, "</section>\n");
	}
	free(r);
	table__free(t);
}

const struct page_family mem_page = {
	.open = mem_page_open,
	.record = mem_page_record,
	.named = mem_page_named,
	.timelines = mem_page_timelines,
	.sections = mem_page_sections,
	.free = mem_page_free,
};
