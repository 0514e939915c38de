// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mem's rules for stats' verdict (verdict.h): memory at risk.
 * - Out of memory: a device refused an allocation (MEM_OOM records): the trace does not say
 *   how much memory a GPU has, so "near OOM" is an OOM seen, with what was asked and the
 *   allocator's allocated and reserved bytes then (mem_sum counts them); when its reserved
 *   but unallocated bytes were more than was asked, the cache was fragmented; and what was
 *   live at the device's peak (mem_peak's first row).
 * - A leak: a site whose live bytes grew at nearly every step (mem_leaks' growing rows).
 * - Fragmentation: a device's peak reserved far above its peak allocated (mem_sum), memory
 *   the caching allocator held that no tensor used.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hmap.h"
#include "human.h"
#include "mem.h"
#include "mem_report.h"
#include "table.h"
#include "trace_model.h"

/* A leak holds once its growth over the steps reaches this. */
#define LEAK_MIN_BYTES (16ull << 20)
/* Reserved but unallocated at the peak: said from these, holds from the next two. */
#define FRAG_SAY_SHARE	0.20
#define FRAG_SAY_BYTES	(64ull << 20)
#define FRAG_HOLD_SHARE (1.0 / 3)
#define FRAG_HOLD_BYTES (1ull << 30)

struct oom_dev {
	__u64 count;
	__u64 asked, allocated, reserved; /* the largest refused, and the totals then */
};

struct mem_rules {
	struct hmap *ooms; /* (pid, (u16)device) -> struct oom_dev */
};

static void *rules__new(void)
{
	struct mem_rules *st = calloc(1, sizeof(*st));

	if (st && !(st->ooms = hmap__new(sizeof(struct oom_dev)))) {
		free(st);
		return NULL;
	}
	return st;
}

static void rules__free(void *vst)
{
	struct mem_rules *st = vst;

	if (!st)
		return;
	hmap__free(st->ooms);
	free(st);
}

static void rules__add(void *vst, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_mem_oom *o = (const void *)rec;
	struct mem_rules *st = vst;
	struct oom_dev *d;

	if (rec->type != BS_REC_MEM_OOM)
		return;
	d = hmap__get(st->ooms, (struct hkey){ rec->pid, (__u16)o->device }, 1);
	if (!d)
		return;
	if (!d->count++ || o->bytes > d->asked) {
		d->asked = o->bytes;
		d->allocated = o->allocated;
		d->reserved = o->reserved;
	}
}

/* "cpu" or "cuda:N", as mem_device_name names them: the device; -ENOENT for another name. */
static int device_named(const char *name, __s16 *device)
{
	char *end;
	long n;

	if (name && !strcmp(name, "cpu")) {
		*device = BS_MEM_DEV_CPU;
		return 0;
	}
	if (!name || strncmp(name, "cuda:", 5))
		return -ENOENT;
	n = strtol(name + 5, &end, 10);
	if (end == name + 5 || *end || n < 0 || n > 32767)
		return -ENOENT;
	*device = (__s16)n;
	return 0;
}

/*
 * The OOMs from a server's answer (stats --from: mem_ooms, a row per process and device);
 * mem_devices, the fragmentation rule's, is read as its table (mem_sum's columns).
 */
static int rules__load(void *vst, const char *name, const struct table *t)
{
	struct mem_rules *st = vst;
	int cp = table__col(t, "pid"), cd = table__col(t, "device"), cn = table__col(t, "count"),
	    ca = table__col(t, "asked"), cal = table__col(t, "allocated"),
	    cr = table__col(t, "reserved");

	if (strcmp(name, "mem_ooms"))
		return 0;
	if (cp < 0 || cd < 0 || cn < 0 || ca < 0 || cal < 0 || cr < 0)
		return -EINVAL;
	for (int r = 0; r < table__nrows(t); r++) {
		struct oom_dev *d;
		__s16 device;

		if (device_named(table__get_str(t, r, cd), &device))
			return -EINVAL;
		d = hmap__get(st->ooms, (struct hkey){ table__get_u64(t, r, cp), (__u16)device },
			      1);
		if (!d)
			return -ENOMEM;
		*d = (struct oom_dev){ table__get_u64(t, r, cn), table__get_u64(t, r, ca),
				       table__get_u64(t, r, cal), table__get_u64(t, r, cr) };
	}
	return 0;
}

/* "cuda:0 of python3 (pid 12)" */
static const char *device_of(struct verdict *v, __u32 pid, const char *dev, char *buf, size_t len)
{
	const char *proc = trace_model__process_name(verdict__model(v), pid);

	snprintf(buf, len, "%s of %s (pid %u)", dev ? dev : "?", proc ? proc : "process", pid);
	return buf;
}

/* "<module> (leak.py:12)": row R's site; its function alone when it has no file. */
static const char *site_of(const struct table *t, int r, char *buf, size_t len)
{
	const char *func = table__get_str(t, r, table__col(t, "func"));
	const char *file = table__get_str(t, r, table__col(t, "file"));

	if (file && *file)
		snprintf(buf, len, "%s (%s:%llu)", func ? func : "?", human__base(file),
			 (unsigned long long)table__get_u64(t, r, table__col(t, "line")));
	else
		snprintf(buf, len, "%s", func ? func : "?");
	return buf;
}

/* Row R's process and device. */
static const char *who_of(struct verdict *v, const struct table *t, int r, char *buf, size_t len)
{
	return device_of(v, (__u32)table__get_u64(t, r, table__col(t, "pid")),
			 table__get_str(t, r, table__col(t, "device")), buf, len);
}

/* mem_peak's first row of the device: what held most of it at its peak. */
static void detail_peak(struct verdict *v, __u32 pid, const char *device)
{
	const struct table *t = verdict__table(v, "mem_peak");
	char site[512], b1[32], b2[32];
	int cp, cd, cb, cpk;

	if (!t)
		return;
	cp = table__col(t, "pid");
	cd = table__col(t, "device");
	cb = table__col(t, "bytes");
	cpk = table__col(t, "peak_bytes");
	for (int r = 0; r < table__nrows(t); r++) {
		const char *d = table__get_str(t, r, cd);
		double bytes = table__get_number(t, r, cb), peak = table__get_number(t, r, cpk);

		if (table__get_u64(t, r, cp) != pid || !d || strcmp(d, device) || peak <= 0)
			continue;
		verdict__detail(v, -1, "mem_peak",
				"of what the recording saw allocated, at its peak (%s), %s held "
				"%s (%.0f%%)",
				human__bytes(peak, b1, sizeof(b1)),
				site_of(t, r, site, sizeof(site)),
				human__bytes(bytes, b2, sizeof(b2)), 100 * bytes / peak);
		return; /* rows are by bytes: the first is the largest */
	}
}

static void claim_ooms(struct mem_rules *st, struct verdict *v)
{
	const struct oom_dev *d;
	char who[160], dev[16], b1[32], b2[32], b3[32];
	struct hkey k;
	size_t it = 0;

	while ((d = hmap__next(st->ooms, &it, &k))) {
		__s16 device = (__s16)(__u16)k.b;
		__u32 pid = (__u32)k.a;

		mem_device_name(device, dev, sizeof(dev));
		device_of(v, pid, dev, who, sizeof(who));
		human__bytes((double)d->asked, b1, sizeof(b1));
		if (device == BS_MEM_DEV_CPU) {
			verdict__claim(v, VERDICT_MEMORY, 1, -1, "mem_sum",
				       "%s ran out of memory: %llu allocation%s refused, the "
				       "largest %s",
				       who, (unsigned long long)d->count, d->count == 1 ? "" : "s",
				       b1);
		} else {
			verdict__claim(v, VERDICT_MEMORY, 1, -1, "mem_sum",
				       "%s ran out of memory: %llu allocation%s refused, the "
				       "largest %s with %s allocated and %s reserved",
				       who, (unsigned long long)d->count, d->count == 1 ? "" : "s",
				       b1, human__bytes((double)d->allocated, b2, sizeof(b2)),
				       human__bytes((double)d->reserved, b3, sizeof(b3)));
			if (d->reserved > d->allocated && d->reserved - d->allocated >= d->asked)
				verdict__detail(
					v, -1, "mem_sum",
					"%s of it was reserved but unallocated, more than was asked: "
					"the cached blocks were too fragmented to hold it "
					"(PYTORCH_CUDA_ALLOC_CONF max_split_size_mb, or "
					"expandable_segments in torch 2.1+)",
					human__bytes((double)(d->reserved - d->allocated), b2,
						     sizeof(b2)));
		}
		detail_peak(v, pid, dev);
	}
}

/* What a mem_leaks row's step is called: "a step", "steps" (per is its per column). */
static const char *per_word(const char *per, int plural)
{
	if (per && !strcmp(per, "loop"))
		return plural ? "passes" : "a pass of its loop";
	if (per && !strcmp(per, "window"))
		return plural ? "windows" : "a window";
	return plural ? "steps" : "a step";
}

/* Rows R and Q of T name the same line of the job's own code in the same process and device. */
static int same_line(const struct table *t, int r, int q)
{
	static const char *const keys[] = { "pid", "device", "func", "file", "line" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int c = table__col(t, keys[i]);
		const char *a = table__get_str(t, r, c), *b = table__get_str(t, q, c);

		if (table__get_number(t, r, c) != table__get_number(t, q, c) ||
		    ((a || b) && (!a || !b || strcmp(a, b))))
			return 0;
	}
	return 1;
}

/* "Conv2d._conv_forward (conv.py:459) 6.90 MiB, ...": the library frames of LINE's rows. */
static void via_list(const struct table *t, const int *rows, int n, char *buf, size_t len)
{
	int cf = table__col(t, "via_func"), cl = table__col(t, "via_line"),
	    cv = table__col(t, "via_file"), cg = table__col(t, "growth_per_step_bytes");
	size_t used = 0;
	char b[32];

	buf[0] = 0;
	for (int i = 0; i < n && used < len; i++) {
		const char *f = table__get_str(t, rows[i], cf),
			   *file = table__get_str(t, rows[i], cv);

		used += snprintf(buf + used, len - used, "%s%s (%s:%llu) %s", i ? ", " : "",
				 f ? f : "its own line", file ? human__base(file) : "",
				 (unsigned long long)table__get_u64(t, rows[i], cl),
				 human__bytes(table__get_number(t, rows[i], cg), b, sizeof(b)));
	}
}

/*
 * mem_leaks' growing rows, gathered by the line of the job's own code (its rows differ by
 * the library frame that allocated): the line that grew most, all of its rows summed, is the
 * claim, and its library frames a detail.
 */
static void claim_leaks(struct verdict *v)
{
	const struct table *t = verdict__table(v, "mem_leaks");
	char who[160], site[512], b1[32], b2[32], more[64] = "", vias[512];
	int cg, nrows, best = -1, lines = 0, *of, nof = 0;
	double growth = 0, live = 0, best_growth = -1;
	const char *per;

	if (!t || !(nrows = table__nrows(t)))
		return;
	cg = table__col(t, "growth_per_step_bytes");
	of = calloc((size_t)nrows, sizeof(*of));
	if (!of)
		return;
	for (int r = 0; r < nrows; r++) {
		int first = 1;
		double sum = 0;

		if (!table__is_set(t, r, cg))
			continue;
		for (int q = 0; q < r && first; q++)
			first = !table__is_set(t, q, cg) || !same_line(t, q, r);
		if (!first)
			continue; /* summed with the line's first row */
		lines++;
		for (int q = r; q < nrows; q++)
			if (table__is_set(t, q, cg) && same_line(t, q, r))
				sum += table__get_number(t, q, cg);
		if (sum > best_growth) {
			best_growth = sum;
			best = r;
		}
	}
	if (best < 0) {
		free(of);
		return;
	}
	for (int q = best; q < nrows; q++)
		if (table__is_set(t, q, cg) && same_line(t, q, best)) {
			of[nof++] = q;
			growth += table__get_number(t, q, cg);
			live += table__get_number(t, q, table__col(t, "live_bytes"));
		}
	if (lines > 1)
		snprintf(more, sizeof(more), "; %d lines grew", lines);
	per = table__get_str(t, best, table__col(t, "per"));
	verdict__claim(
		v, VERDICT_MEMORY,
		growth * table__get_number(t, best, table__col(t, "steps")) >= LEAK_MIN_BYTES, -1,
		"mem_leaks", "a leak: %s grew %s by %s %s at %llu of %llu %s; %s live at the end%s",
		site_of(t, best, site, sizeof(site)), who_of(v, t, best, who, sizeof(who)),
		human__bytes(growth, b1, sizeof(b1)), per_word(per, 0),
		(unsigned long long)table__get_u64(t, best, table__col(t, "grew")),
		(unsigned long long)table__get_u64(t, best, table__col(t, "steps")),
		per_word(per, 1), human__bytes(live, b2, sizeof(b2)), more);
	if (nof > 1 || table__get_str(t, best, table__col(t, "via_func"))) {
		via_list(t, of, nof, vias, sizeof(vias));
		verdict__detail(v, -1, "mem_leaks", "allocated through %s", vias);
	}
	free(of);
}

/* mem_sum's devices with the allocator's totals: reserved far above allocated. */
static void claim_fragmentation(struct verdict *v)
{
	const struct table *t = verdict__table(v, "mem_sum");
	char who[160], b1[32], b2[32], b3[32];
	int ca, cr;

	if (!t) /* from a server: its columns, the devices with the allocator's totals */
		t = verdict__table(v, "mem_devices");

	if (!t)
		return;
	ca = table__col(t, "peak_allocated_bytes");
	cr = table__col(t, "peak_reserved_bytes");
	for (int r = 0; r < table__nrows(t); r++) {
		__u64 alloc = table__get_u64(t, r, ca), res = table__get_u64(t, r, cr), idle;

		if (!table__is_set(t, r, cr) || res <= alloc)
			continue;
		idle = res - alloc;
		if (idle < FRAG_SAY_BYTES || idle < FRAG_SAY_SHARE * res)
			continue;
		verdict__claim(v, VERDICT_MEMORY,
			       idle >= FRAG_HOLD_BYTES && idle >= FRAG_HOLD_SHARE * res, -1,
			       "mem_sum",
			       "%s reserved %s at its peak for %s allocated: %s cached that no "
			       "tensor used (fragmentation, or blocks freed and kept by the "
			       "caching allocator)",
			       who_of(v, t, r, who, sizeof(who)),
			       human__bytes((double)res, b1, sizeof(b1)),
			       human__bytes((double)alloc, b2, sizeof(b2)),
			       human__bytes((double)idle, b3, sizeof(b3)));
	}
}

static void rules__claims(void *vst, struct verdict *v)
{
	claim_ooms(vst, v);
	claim_leaks(v);
	claim_fragmentation(v);
}

const struct family_verdict mem_verdict = {
	.new = rules__new,
	.add = rules__add,
	.claims = rules__claims,
	.free = rules__free,
	/* mem_peak and mem_leaks are computed in the server too: mem_peak_sql.c, mem_leaks_sql.c */
	.reads = "mem_ooms,mem_devices,mem_peak,mem_leaks",
	.load = rules__load,
};
