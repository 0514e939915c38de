// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for everything that reads a record after the trace reader handed it over:
 * the trace model and every family's walk hooks, every decoder with dump's JSON line, every
 * stats report (add, then emit and the three table printers) with the steps service (steps.h)
 * fed the same records, and optionally the exports.
 * `make fuzz`, or
 *   build/tests/fuzz_decode -runs=100000 CORPUS_DIR tests/fuzz/seeds-decode
 *
 * Input: one options byte (bit 0: chrome export, bit 1: perfetto, bit 2: sqlite, bit 3:
 * folded, bit 4: pprof and the families' own formats (struct family.exporters), bit 5: svg,
 * bit 6: `top FILE`'s counters and frames, bit 7: the sync hooks see a recording of the gpu
 * family), then records as they lie in memory (struct bs_hdr first), back to back. The harness frames them
 * the way trace_reader__next hands them over, so nothing the reader would refuse reaches a
 * decoder: type modulo BS_REC_TYPE_MAX (FOOTER and CHUNK_INDEX skipped), size rounded down
 * to a multiple of 8, at least the header, at most what is left. Each record is a fresh
 * allocation of exactly its size, freed after use: a decoder or report that reads past a
 * record's size, or keeps a pointer into it, trips ASan. Records shorter than their
 * decoder's min_size are set aside as trace_walk__next does.
 *
 * The families' reorder hooks (struct family_reorder: the gpu family's launch join, run again
 * as a trace is read) see every record too; what each holds and gives back is checked as the
 * walk would hand it on (a whole record of its own size) and decoded.
 *
 * bpfsight merge's reading of a file goes through here too: every family's sync hook (struct
 * family_sync) sees every record, and each record is rebased (merge_rebase__record) as merge
 * writes it.
 *
 * Seeds: tests/fuzz/seeds-decode, raw records of real recordings (tests/fuzz/trace_records.c).
 * The production code's warnings go to /dev/null (BPFSIGHT_FUZZ_VERBOSE=1 keeps them);
 * sanitizer and libFuzzer output do not use the stderr stream and are not affected.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export_model.h"
#include "family_stats.h"
#include "commands.h"
#include "event.h"
#include "export.h"
#include "family.h"
#include "json.h"
#include "merge.h"
#include "report.h"
#include "steps.h"
#include "table.h"
#include "trace_format.h"
#include "trace_model.h"
#include "record_ctx.h"
#include "top.h"
#include "top_screen.h"

#define OPT_CHROME   0x1
#define OPT_PERFETTO 0x2
#define OPT_SQLITE   0x4
#define OPT_FOLDED   0x8
#define OPT_PPROF    0x10
#define OPT_SVG	     0x20
#define OPT_TOP	     0x40
#define TOP_EVERY    64 /* records between two frames of top */
#define OPT_GPU_SYNC 0x80
#define MAX_EXPORTS  16
#define MAX_REPORTS  64

/*
 * The formats every trace has (export_formats), each on its options bit (a seed's bits keep
 * their meaning whatever the list's order; one not named here goes with folded), then the
 * families' own, on OPT_PPROF.
 */
static const struct exporter *exporters[MAX_EXPORTS];
static __u8 exporter_bit[MAX_EXPORTS];
static int nexporters;

static __u8 format_bit(const char *format)
{
	static const struct {
		const char *format;
		__u8 bit;
	} bits[] = { { "chrome", OPT_CHROME }, { "perfetto", OPT_PERFETTO },
		     { "sqlite", OPT_SQLITE }, { "folded", OPT_FOLDED },
		     { "pprof", OPT_PPROF },   { "svg", OPT_SVG } };

	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		if (!strcmp(bits[i].format, format))
			return bits[i].bit;
	return OPT_FOLDED;
}
static const struct report *reports[MAX_REPORTS];
static int nreports;
static FILE *sink;
static char out_path[MAX_EXPORTS][64];

static struct trace_meta meta = {
	.version = 1,
	.hostname = "fuzz",
	.kernel = "6.18.0",
	.families = "proc,osrt,sched,gil,cuda,nccl,gpu,nvtx",
	.target = "launch",
	.tool_version = "fuzz",
	.start = { 0, 1700000000000000000ull, 0 }, /* mono: the first record's time */
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *v = getenv("BPFSIGHT_FUZZ_VERBOSE");
	const struct report *const *rp;
	const char *dir = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";

	for (const struct exporter *const *e = export_formats; *e; e++)
		if (nexporters < MAX_EXPORTS) {
			exporter_bit[nexporters] = format_bit((*e)->format);
			exporters[nexporters++] = *e;
		}
	for_each_family(it) {
		for (rp = family__stats(it.f)->reports; rp && *rp; rp++)
			if (nreports < MAX_REPORTS)
				reports[nreports++] = *rp;
		for (const struct exporter *const *e = family__exporters(it.f); e && *e; e++)
			if (nexporters < MAX_EXPORTS) {
				exporter_bit[nexporters] = OPT_PPROF;
				exporters[nexporters++] = *e;
			}
	}
	for (int i = 0; i < nexporters; i++)
		snprintf(out_path[i], sizeof(out_path[i]), "%s/fuzz_decode.%d.%d", dir,
			 (int)getpid(), i);
	sink = fopen("/dev/null", "w");
	if (!sink)
		abort();
	if (!v || strcmp(v, "1"))
		stderr = sink; /* libFuzzer and the sanitizers write to their own descriptors */
	return 0;
}

/* The next record of IN framed as the reader would hand it over; 0 at the end. */
static size_t next_record(const __u8 *in, size_t left, struct bs_hdr **out)
{
	struct bs_hdr h;
	size_t size;

	*out = NULL;
	if (left < sizeof(h))
		return 0;
	memcpy(&h, in, sizeof(h));
	size = h.size & ~7u;
	if (size < sizeof(h))
		size = sizeof(h);
	if (size > left)
		size = left & ~(size_t)7;
	h.type %= BS_REC_TYPE_MAX;
	if (h.type == BS_REC_FOOTER || h.type == BS_REC_CHUNK_INDEX)
		return size; /* the reader consumes these itself */
	*out = malloc(size);
	if (!*out)
		abort();
	memcpy(*out, in, size);
	(*out)->type = h.type;
	(*out)->size = (__u16)size;
	return size;
}

/* top FILE: its counters fed what the reader hands over, a frame cut and drawn now and then. */
static struct top *top_open(struct record_opts *o)
{
	struct top *t;

	o->families = 0;
	for_each_family(it)
		if (it.f->top)
			o->families |= 1ull << it.i;
	t = top__new(o);
	if (!t)
		abort();
	top__replay(t);
	return t;
}

static void top_frame_out(struct top *t, struct top_frame *fr, __u64 now)
{
	struct top_view v = { .threads = 1, .idle = 1, .target = "fuzz", .interval_ns = 1 };

	if (top__cut(t, now, fr))
		abort();		/* only memory fails */
	v.sort = now % (fr->ncols + 1); /* any column, a hidden one too */
	top_screen__render(sink, fr, &v, 20 + now % 100, now % 30);
}

static void no_point(void *arg, const struct sync_point *p)
{
}

/* What merge does with each record of a file: its sync points, and a rebased copy. */
static void merge_record(void **sync, const struct bs_hdr *rec, const struct trace_model *m)
{
	static const struct merge_input in = { .ns = 5,
					       .string_base = 1000,
					       .stack_base = 1000,
					       .mono0 = 1000,
					       .merged0 = 77,
					       .rate = 1e-5 };
	struct bs_hdr *copy = malloc(rec->size);

	if (!copy)
		abort();
	for_each_family(it) {
		int err = sync[it.i]
				  ? it.f->decode->sync->observe(sync[it.i], rec, m, no_point, NULL)
				  : 0;

		if (err && err != -ENOMEM)
			abort(); /* a hook fails only when memory does */
	}
	memcpy(copy, rec, rec->size);
	merge_rebase__record(copy, &in);
	free(copy);
}

/* --steps as stats takes it: each input runs one of these, by its length. */
static const char *const steps_asks[] = { NULL, "cudaProfilerApi", "nvtx:step@*", "ProfilerStep" };

static void emit_reports(void **st, const struct trace_model *m, struct steps *steps)
{
	struct report_ask ask = { .steps = steps };
	struct json j;
	int err;

	err = steps__finish(steps);
	if (err && err != -ENOMEM)
		abort(); /* it fails only when memory does */
	for (int i = 0; i < nreports; i++) {
		struct table *t = table__new(reports[i]->name);

		if (!t)
			abort();
		if (reports[i]->emit_for)
			err = reports[i]->emit_for(st[i], m, &ask, t);
		else
			err = reports[i]->emit(st[i], m, t);
		if (err && err != -ENOMEM)
			abort(); /* emit fails only when memory does */
		table__print(t, sink);
		table__print_csv(t, sink);
		json__init(&j, sink, 1);
		table__print_json(t, &j);
		table__free(t);
	}
}

/* A record a reorder hook gave back: whole, as trace_walk__next hands it on, and decodable. */
static void released(const struct bs_hdr *r, const struct trace_model *m)
{
	const struct rec_decoder *dec;
	struct event ev;

	if (r->size < sizeof(*r) || r->size % 8)
		abort(); /* the walk would hand on a record its readers cannot frame */
	dec = family__decoder(r->type);
	if (dec && r->size >= dec->min_size && family__decode(r, m, &ev) < 0)
		abort();
}

/* REC (NULL: the file ended) through every family's reorder hook, what each releases checked. */
static void reorder(void **st, const struct bs_hdr *rec, const struct trace_model *m)
{
	const struct bs_hdr *r;

	for_each_family(it) {
		if (!st[it.i])
			continue;
		if (rec)
			it.f->decode->reorder->feed(st[it.i], rec);
		else
			it.f->decode->reorder->end(st[it.i]);
		while ((r = it.f->decode->reorder->next(st[it.i])))
			released(r, m);
	}
}

int LLVMFuzzerTestOneInput(const __u8 *data, size_t size)
{
	struct trace_status status = { .clean_close = 1, .has_end = 1 };
	void *rst[MAX_REPORTS] = {}, *xst[MAX_EXPORTS] = {}, *sync[FAMILY_MAX] = {};
	void *reo[FAMILY_MAX] = {};
	struct trace_meta smeta = meta; /* what the sync hooks are told was recorded */
	const struct rec_decoder *dec;
	struct trace_model *m;
	struct steps *steps;
	struct bs_hdr *rec;
	struct event ev;
	size_t off, n, nrec = 0;
	struct record_opts top_opts = {};
	struct top_frame top_fr = {};
	struct top *top = NULL;
	__u64 clock = 0;
	__u8 opts;
	int ret, err;

	if (!size)
		return 0;
	opts = data[0];
	m = trace_model__new();
	if (!m)
		abort();
	for (int i = 0; i < nreports; i++)
		if (!(rst[i] = reports[i]->new ()))
			abort();
	steps = steps__new(steps_asks[size % (sizeof(steps_asks) / sizeof(steps_asks[0]))]);
	if (!steps)
		abort();
	smeta.families = opts & OPT_GPU_SYNC ? "proc,nccl,cuda,gpu" : "proc,nccl";
	for_each_family(it) {
		if (it.f->decode->sync && !(sync[it.i] = it.f->decode->sync->new (&smeta)))
			abort();
		if (it.f->decode->reorder && !(reo[it.i] = it.f->decode->reorder->new (&smeta)))
			abort();
	}
	/* A recording starts just before its first record: the exports' origin of time. */
	meta.start.mono_ns = 0;
	if (size >= 1 + sizeof(*rec))
		memcpy(&meta.start.mono_ns, data + 1 + offsetof(struct bs_hdr, ts), 8);
	meta.start.boottime_ns = meta.start.mono_ns;
	for (int i = 0; i < nexporters; i++) {
		if (!(opts & exporter_bit[i]))
			continue;
		unlink(out_path[i]);
		xst[i] = exporters[i]->open(out_path[i], &meta, NULL, &err);
		if (!xst[i])
			abort();
	}

	if (opts & OPT_TOP)
		top = top_open(&top_opts);
	for (off = 1; (n = next_record(data + off, size - off, &rec)); off += n) {
		const struct event *evp = NULL;

		if (!rec)
			continue;
		if (top) { /* before the decoder's size check: top's hooks check sizes themselves */
			clock = rec->ts > clock ? rec->ts : clock;
			top__record(top, rec);
			if (!(++nrec % TOP_EVERY))
				top_frame_out(top, &top_fr, clock);
		}
		dec = family__decoder(rec->type);
		if (dec && rec->size < dec->min_size) {
			free(rec); /* trace_walk__next: counted and skipped, never decoded */
			continue;
		}
		reorder(reo, rec, m);
		trace_model__observe(m, rec);
		if (!status.records || rec->ts < status.first_ts)
			status.first_ts = rec->ts;
		if (!status.records || rec->ts > status.last_ts)
			status.last_ts = rec->ts;
		status.records++;
		if (dec) {
			ret = family__decode(rec, m, &ev);
			if (ret < 0)
				abort(); /* the size was checked: decoders have no other failure */
			if (ret == 1) {
				dump_event(sink, &ev, m);
				evp = &ev;
			}
		}
		steps__add(steps, rec, m);
		for (int i = 0; i < nreports; i++)
			reports[i]->add(rst[i], rec, m);
		merge_record(sync, rec, m);
		for (int i = 0; i < nexporters; i++) {
			if (xst[i] && exporters[i]->record(xst[i], rec, evp, m)) {
				exporters[i]->abort(xst[i]); /* a write failed: what export does */
				xst[i] = NULL;
			}
		}
		free(rec);
	}

	if (top) {
		top_frame_out(top, &top_fr, clock);
		top_frame__free(&top_fr);
		top__free(top);
	}
	emit_reports(rst, m, steps);
	status.end.mono_ns = status.last_ts;
	for (int i = 0; i < nexporters; i++) {
		if (xst[i])
			exporters[i]->finish(xst[i], m, &status);
		unlink(out_path[i]);
	}
	for (int i = 0; i < nreports; i++)
		reports[i]->free(rst[i]);
	steps__free(steps);
	reorder(reo, NULL, m);
	for_each_family(it) {
		if (reo[it.i])
			it.f->decode->reorder->free(reo[it.i]);
		if (!sync[it.i])
			continue;
		it.f->decode->sync->finish(sync[it.i], no_point, NULL);
		it.f->decode->sync->free(sync[it.i]);
	}
	trace_model__free(m);
	return 0;
}
